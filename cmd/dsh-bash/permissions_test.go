//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/toolbash"
)

// TestRunPermissions: rules from flags and the configuration file; a
// denied command does not run; a command no rule matches runs, as run's
// default, or with --default ask is an ask, which without a terminal is a
// denial that says how to allow; a repository's own rules count only when
// the user's configuration says so.
func TestRunPermissions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, _, code := dshBash(t, dir, "run", "--deny", "touch", "--", "echo a && touch planted")
	if code != 1 || !strings.HasPrefix(out, "permission denied: `touch planted` matches rule deny \"touch\" (--deny)") {
		t.Errorf("denied: %q (exit %d)", out, code)
	}
	if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil {
		t.Error("the denied command ran")
	}
	out, _, code = dshBash(t, dir, "run", "--deny", "touch", "--", "ls planted 2>/dev/null; echo listed")
	if code != 0 || out != "listed\n" {
		t.Errorf("a built-in allowed command: %q (exit %d)", out, code)
	}
	// A deny rule holds where the program starts, whatever starts it.
	out, _, code = dshBash(t, dir, "run", "--deny", "touch", "--", "printf 'touch planted\\n' > s.sh; sh s.sh; echo went on")
	if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil || code != 0 ||
		!strings.Contains(out, "went on\n") || !strings.Contains(out, "[refused by deny rule `touch`: `touch planted` (") {
		t.Errorf("a denied program a script runs: %q (exit %d), planted: %v", out, code, err == nil)
	}
	// run's default: a command no rule matches runs (the user typed it).
	out, _, code = dshBash(t, dir, "run", "--deny", "touch", "--", "mkdir made")
	if _, err := os.Stat(filepath.Join(dir, "made")); code != 0 || err != nil {
		t.Errorf("unmatched, under run's default: %q (exit %d), %v", out, code, err)
	}
	out, _, code = dshBash(t, dir, "run", "--deny", "touch", "--default", "ask", "--", "mkdir asked")
	if code != 1 || !strings.Contains(out, "this client cannot ask the user") || !strings.Contains(out, "--allow 'mkdir'") {
		t.Errorf("an ask without a terminal: %q (exit %d)", out, code)
	}

	os.MkdirAll(filepath.Join(dir, ".dsh"), 0o755)
	os.WriteFile(filepath.Join(dir, ".dsh", "permissions.json"), []byte(`{"allow": ["mkdir"]}`), 0o644)
	for _, trust := range []bool{false, true} {
		cfg := filepath.Join(t.TempDir(), "config.json")
		os.WriteFile(cfg, []byte(`{"permissions": {"deny": ["touch"], "default": "ask", "projectRules": `+strconv.FormatBool(trust)+`}}`), 0o600)
		out, _, code = dshBash(t, dir, "run", "--config", cfg, "--", "mkdir by-project")
		_, err := os.Stat(filepath.Join(dir, "by-project"))
		if ran := err == nil; ran != trust {
			t.Errorf("projectRules %v: the repository's allow rule applied: %v (%q, exit %d)", trust, ran, out, code)
		}
	}
	// The hint works when followed: an ask rule is not answered by an
	// allow rule, and the file named is the one in use.
	out, _, code = dshBash(t, dir, "run", "--ask", "git push", "--allow", "git push", "--", "git push")
	if code != 1 || strings.Contains(out, "--allow") || !strings.Contains(out, "The user's own rule asks about it") {
		t.Errorf("an ask rule's hint: %q (exit %d)", out, code)
	}
	cfg := filepath.Join(t.TempDir(), "mine.json")
	os.WriteFile(cfg, []byte(`{"permissions": {"deny": ["touch"], "default": "ask"}}`), 0o600)
	out, _, code = dshBash(t, dir, "run", "--config", cfg, "--", "sed -i s/a/b/ f")
	if code != 1 || !strings.Contains(out, "--allow 'sed -i'") || !strings.Contains(out, "in "+cfg+".") {
		t.Errorf("the hint with --config: %q (exit %d)", out, code)
	}
	_, errOut, code := dshBash(t, dir, "run", "--allow", "'unterminated", "--", "true")
	if code != 2 || !strings.Contains(errOut, "--allow") {
		t.Errorf("a bad rule: exit %d, %q", code, errOut)
	}
}

// TestRunAsksOnTerminal: with a terminal on stdin, run asks there; "y"
// runs the command, "n" does not.
func TestRunAsksOnTerminal(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			dir := t.TempDir()
			master, slave := openPTY(t)
			if _, err := master.Write([]byte(answer + "\n")); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(binary, "run", "--deny", "touch", "--default", "ask", "--", "mkdir viatty")
			cmd.Dir, cmd.Stdin, cmd.Env = dir, slave, append(os.Environ(), "TMPDIR="+t.TempDir())
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			_ = run(t, cmd)
			_, err := os.Stat(filepath.Join(dir, "viatty"))
			if ran := err == nil; ran != (answer == "y") || !strings.Contains(errOut.String(), "Run it? [y]es once, [a]lways allow mkdir, [N]o") {
				t.Errorf("answer %s: ran %v; stdout %q, stderr %q", answer, ran, out.String(), errOut.String())
			}
		})
	}
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no pty:", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestTerminalAskerShowsWhatRuns: run's question on the terminal shows
// what the terminal would act on escaped, and reads the answer.
func TestTerminalAskerShowsWhatRuns(t *testing.T) {
	var out strings.Builder
	ask := permissionAsker(newPrompter(strings.NewReader("y\n"), &out))
	q := toolbash.Question{Command: "touch x #\x1b[2K\recho hi", Verdict: permission.Verdict{Reason: "no rule allows `touch x`", Prefixes: []string{"touch\u202e"}}}
	ans, err := ask(t.Context(), q)
	if err != nil || ans != toolbash.AllowOnce {
		t.Errorf("answer y: %v, %v", ans, err)
	}
	if got := out.String(); strings.ContainsAny(got, "\x1b\r\u202e") || !strings.Contains(got, `touch x #\x1b[2K\recho hi`) || !strings.Contains(got, `touch\u202e`) {
		t.Errorf("the question: %q", got)
	}
}
