package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/setup"
	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
)

// isTerminal reports whether w (or a reader) is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && isTTY(f)
}

// runCmd makes one bash tool call and prints the model-facing text (exactly,
// unless stdout is a terminal, which gets a final newline). It exits
// 0 whatever the command did; 1 when the tool itself failed (an error
// result), 2 for bad usage.
func runCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, ef := newFlags("run", stderr)
	cwd := fs.String("cwd", "", "the workspace, where the call runs (default: the current directory)")
	workdir := fs.String("workdir", "", "working directory of the call (relative: from --cwd); one outside --cwd is the workspace")
	timeoutMs := fs.Float64("timeout-ms", 0, "the call's timeoutMs")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if !checkCwd("run", *cwd, stderr) {
		return 2
	}
	command := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(command) == "" {
		fmt.Fprint(stderr, "dsh-bash run: no command given\n\n"+usage)
		return 2
	}
	if t := *timeoutMs; math.IsNaN(t) || math.IsInf(t, 0) {
		// JSON has no such numbers: say so as the tool would of any other.
		fmt.Fprintf(stderr, "dsh-bash run: invalid timeoutMs: expected a positive number, got %v\n", t)
		return 2
	}
	opts := ef.options()
	opts.Cwd = *cwd
	opts.KeepSpillFiles = true // their paths are printed for the user to open
	s, code := ef.executor(ctx, "run", opts, stderr)
	if code != 0 {
		return code
	}
	exec := s.Executor()
	defer func() {
		closeExecutor("run", s, stderr)
		sayKept(exec, stderr)
	}()
	ws, wd := runWorkspace(*cwd, *workdir)
	if _, err := checkWorkspace(ctx, exec, ws); refusalReason(err) != "" {
		fmt.Fprintf(stderr, "dsh-bash run: the sandbox refuses the workspace %s: %s. Run it in a project directory, or name one with --cwd DIR\n", ws, refusalReason(err))
		return 2
	}
	tb := toolbash.New(exec, &toolbash.Options{MaxResultChars: ef.maxResultChars})
	defer tb.Close()
	reg, err := runTools(s, tb, stdin, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash run: %v\n", err)
		return 2
	}
	raw, err := callArgs(fs, command, wd, *timeoutMs)
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash run: %v\n", err)
		return 2
	}
	res := reg.Execute(ctx, &tools.Call{Tool: toolbash.BashName, Args: raw, Session: session.Session{Cwd: ws}})
	text := res.Text()
	if !strings.HasSuffix(text, "\n") && isTerminal(stdout) {
		text += "\n" // for the prompt's sake; piped output stays exact
	}
	fmt.Fprint(stdout, text)
	left, _ := exec.List(ctx)
	for _, t := range left {
		if !t.Done() {
			fmt.Fprintf(stderr, "dsh-bash run: stopping %s, which the command left running, as dsh-bash exits\n", t.ID)
		}
	}
	if res.IsError {
		return 1
	}
	return 0
}

// runTools registers tb's tools for run, behind the permission gate
// where rules are configured. Where stdin is a terminal, one prompter
// asks every question there: the gate's and the allowlist's.
func runTools(s *setup.Setup, tb *toolbash.Tools, stdin io.Reader, stderr io.Writer) (*tools.Registry, error) {
	var p *prompter
	if isTerminal(stdin) {
		p = newPrompter(stdin, stderr)
	}
	useTerminal(s.Proxy(), p, stderr)
	var reg tools.Registry
	perm, err := s.GateOptions("run")
	if err != nil {
		return nil, err
	}
	if perm != nil {
		if p != nil {
			perm.Ask = permissionAsker(p) // else an ask is a denial
		}
		reg.Use(toolbash.NewGate(perm).Middleware)
	}
	return &reg, tb.Register(&reg)
}

// runWorkspace is the workspace of run's call, and the working directory
// to pass it: the directory --cwd names (default: the current one), or the
// --workdir the user named when it lies outside that (a directory the user
// names is one they mean commands to use, sandboxed or not), then passed
// as an absolute path.
func runWorkspace(cwd, workdir string) (ws, wd string) {
	base, err := filepath.Abs(cmp.Or(cwd, "."))
	if err != nil || workdir == "" {
		return base, workdir
	}
	abs := workdir
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, abs)
	}
	if inside(abs, base) {
		return base, workdir
	}
	return abs, abs
}

// callArgs are the bash tool's arguments for the command line's call; the
// timeout is passed only when the flag was given.
func callArgs(fs *flag.FlagSet, command, workdir string, timeoutMs float64) (json.RawMessage, error) {
	call := map[string]any{"command": command, "description": "Run a command from the dsh-bash command line"}
	if workdir != "" {
		call["workdir"] = workdir
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "timeout-ms" {
			call["timeoutMs"] = timeoutMs
		}
	})
	return json.Marshal(call)
}

// inside reports whether path is dir or lies under it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// useTerminal makes the terminal the front end of the allowlist's proxy,
// if there is one: it asks p, the terminal's prompter, nil where stdin is
// no terminal (then an unlisted host is refused unasked), and says each
// refusal on stderr.
func useTerminal(proxy *egress.Proxy, p *prompter, stderr io.Writer) {
	if proxy == nil {
		return
	}
	var ask func(context.Context, egress.Question) (egress.Decision, error)
	if p != nil {
		ask = networkAsker(p)
	}
	proxy.SetFront(ask, func(r *egress.Refusal) {
		if r.Reason != egress.Malformed {
			fmt.Fprintf(stderr, "dsh-bash run: %s\n", proxy.RefusalText(r))
		}
	})
}
