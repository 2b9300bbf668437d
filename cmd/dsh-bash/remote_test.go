//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
)

// overExecutor makes remote executors over `dsh-bash executor` processes
// started with the suite's knobs as flags, and extra flags.
func overExecutor(extra ...string) bashtest.NewFunc {
	return func(t *testing.T, c bashtest.Config) bash.Executor {
		ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
		argv := append([]string{binary, "executor", "--cwd", c.Cwd,
			"--default-timeout-ms", ms(c.Timeout), "--max-timeout-ms", ms(c.MaxTimeout),
			"--grace-ms", ms(c.Grace), "--drain-delay-ms", ms(c.DrainDelay),
			"--max-output-bytes", strconv.Itoa(c.MaxOutputBytes),
			"--max-tasks", strconv.Itoa(c.MaxTasks), "--max-tasks-per-session", strconv.Itoa(c.MaxTasksPerOwner),
		}, extra...)
		for _, e := range c.Env {
			argv = append(argv, "--env", e)
		}
		cmd := &remote.Command{Argv: argv, Env: append(os.Environ(), "TMPDIR="+t.TempDir()), Stderr: os.Stderr}
		return dial(t, cmd, "dsh-bash executor")
	}
}

// dial starts the far side cmd and makes an executor over it, once the
// handshake is through; the test fails if that takes longer than
// testwait.Limit.
func dial(t *testing.T, cmd *remote.Command, host string) *remote.Executor {
	t.Helper()
	e, err := testwait.Reply("hello of "+host, func(ctx context.Context) (*remote.Executor, error) {
		return remote.Dial(ctx, cmd.Dial, &remote.Options{Host: host})
	})
	if err != nil {
		t.Fatalf("the far side did not serve: %v", err)
	}
	return e
}

// TestExecutorTranscript runs the shared transcript through `dsh-bash
// executor` as a subprocess, with and without the sandbox on the far
// side: the same bytes as every executor's. (The whole contract runs on
// the far side's code in bash/remote, over pipes and over SSH to a far
// side in a process of its own; here it is the binary's wiring that is
// checked, each of its race-built processes costing a tenth of a second
// of CPU.)
func TestExecutorTranscript(t *testing.T) {
	t.Parallel()
	const golden = "../../toolbash/toolbashtest/testdata/transcript.txtar"
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		toolbashtest.Transcript(t, overExecutor("--sandbox=off"), golden, false)
	})
	t.Run("sandbox", func(t *testing.T) {
		t.Parallel()
		requireBwrap(t)
		toolbashtest.Transcript(t, overExecutor("--sandbox=on"), golden, false)
	})
}

// TestExecutorCmd: mcp and run with --executor-cmd run their commands
// through dsh-bash executor, and say where in the MCP instructions.
func TestExecutorCmd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	far := binary + " executor --sandbox=off --cwd " + dir
	out, errOut, code := dshBash(t, t.TempDir(), "run", "--executor-cmd", far, "--remote-workspace", dir, "--", "pwd; echo $((6*7))")
	if code != 0 || out != dir+"\n42\n" {
		t.Errorf("run in the remote workspace: %q (stderr %q, exit %d)", out, errOut, code)
	}
	here := t.TempDir()
	out, errOut, code = dshBash(t, here, "run", "--executor-cmd", far, "--", "pwd")
	if code != 0 || out != here+"\n" {
		t.Errorf("run without a remote workspace, in the caller's directory: %q (stderr %q, exit %d)", out, errOut, code)
	}
	_, errOut, code = dshBash(t, dir, "run", "--executor-cmd", far, "--sandbox=on", "--", "true")
	if code != 2 || !strings.Contains(errOut, "give them to the far side") {
		t.Errorf("sandbox flags with --executor-cmd: exit %d, stderr %q", code, errOut)
	}
	// "on" from any source, not just the flag.
	conf := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(conf, []byte(`{"sandbox": {"mode": "on"}}`), 0o600)
	for _, env := range [][]string{{"DSH_BASH_SANDBOX=on"}, {"DSH_BASH_SANDBOX=", "DSH_BASH_CONFIG=" + conf}} {
		_, errOut, code = dshBashEnv(t, dir, env, "run", "--executor-cmd", far, "--", "true")
		if code != 2 || !strings.Contains(errOut, "give them to the far side") {
			t.Errorf("sandbox on (%q) with --executor-cmd: exit %d, stderr %q", env, code, errOut)
		}
	}
	_, errOut, code = dshBash(t, dir, "run", "--executor-cmd", "/nonexistent/dsh-bash executor", "--", "true")
	if code != 1 || !strings.Contains(errOut, "/nonexistent/dsh-bash") {
		t.Errorf("a far side that cannot start: exit %d, stderr %q", code, errOut)
	}
}

// TestMCPOverExecutor: an MCP server whose commands run through dsh-bash
// executor tells the model where they run, and that they are not
// sandboxed there; its calls work; at its stdin's EOF the far side's
// tasks die with it.
func TestMCPOverExecutor(t *testing.T) {
	t.Parallel()
	far := binary + " executor --sandbox=off"
	m := startRawMCP(t, "--executor-cmd", far)
	if !strings.Contains(m.init, "Commands run on") || !strings.Contains(m.init, "NOT sandboxed there") {
		t.Errorf("the instructions do not say where commands run: %s", m.init)
	}
	fifo := t.TempDir() + "/pid"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	m.call(1, "echo $$ > "+fifo+"; exec sleep 300", true)
	pid := proctest.PidFromFIFO(t, fifo)
	if a := m.answer(1); !strings.Contains(a, "started background task bash-1") {
		t.Errorf("the background call: %s", a)
	}
	m.in.Close()
	m.exited()
	if err := proctest.WaitExit(pid, 10*time.Second); err != nil {
		t.Errorf("the far side's task outlived the MCP server: %v", err)
	}
}

// TestExecutorIgnoresConfiguredRemotes: the far side's dsh-bash executor
// runs commands itself, even when the configuration file there names
// remote hosts (for the clients that read it).
func TestExecutorIgnoresConfiguredRemotes(t *testing.T) {
	t.Parallel()
	cfg := t.TempDir() + "/config.json"
	os.WriteFile(cfg, []byte(`{"remote": {"executorCmds": ["/nonexistent/relay executor"]}}`), 0o600)
	cmd := &remote.Command{Argv: []string{binary, "executor", "--sandbox=off", "--config", cfg}, Stderr: os.Stderr}
	e := dial(t, cmd, "far")
	defer e.Close()
	if h := e.Hello(); h.Containment == "" || strings.HasPrefix(h.Containment, "remote") {
		t.Errorf("the far side relays: containment %q", h.Containment)
	}
	var res bash.RunResult
	err := testwait.Call("the run of echo here", func(ctx context.Context) error {
		spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "echo here"})
		if err != nil {
			return err
		}
		res, err = e.Run(ctx, spec)
		return err
	})
	if err != nil || res.Stdout.Text != "here\n" {
		t.Errorf("%+v %v", res, err)
	}
}

// TestInapplicableFlagsRefused: a flag that the other settings leave
// without effect is refused, naming it, instead of ignored.
func TestInapplicableFlagsRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--remote-upload"}, "--remote-upload applies to --remote hosts, and none is given"},
		{[]string{"--executor-cmd", "true", "--remote-upload"}, "--remote-upload applies to --remote hosts"},
		{[]string{"--sandbox=off", "--sandbox-network=off"}, "--sandbox-network has no effect with --sandbox=off"},
		{[]string{"--k8s-warm", "2"}, "--k8s-warm applies to a --remote k8s://NAMESPACE, and none is given"},
		{[]string{"--remote", "ssh://box", "--k8s-template", "pod.yaml"}, "--k8s-template applies to a --remote k8s://NAMESPACE"},
		{[]string{"--remote", "k8s://agents"}, "a k8s:// remote needs a pod template: --k8s-template FILE"},
		{[]string{"--remote", "k8s://Agents_1", "--k8s-template", "pod.yaml"}, `namespace "Agents_1"`},
		{[]string{"--remote", "k8s://agents", "--remote", "ssh://box", "--k8s-template", "pod.yaml"}, "a k8s:// remote is the only far side"},
		{[]string{"--remote", "k8s://agents", "--k8s-template", "/nonexistent/pod.yaml"}, "pod template: open /nonexistent/pod.yaml"},
	} {
		args := append(append([]string{"run"}, tt.args...), "--", "true")
		_, errOut, code := dshBash(t, t.TempDir(), args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tt.args, code, errOut, tt.want)
		}
	}
}
