//go:build linux

package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
	"golang.org/x/sys/unix"
)

// argLimit is the kernel's MAX_ARG_STRLEN: no argument may be this long,
// its NUL included.
const argLimit = 128 << 10

// TestLongHeredoc: a 1 MiB heredoc, far past what argv can carry, writes
// its file byte for byte.
func TestLongHeredoc(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	out := filepath.Join(t.TempDir(), "big")
	var body strings.Builder
	r := rand.New(rand.NewPCG(1, 2))
	for body.Len() < 1<<20 {
		for range 99 {
			body.WriteByte(byte('!' + r.IntN(94)))
		}
		body.WriteByte('\n')
	}
	cmd := "cat > " + out + " <<'EOF'\n" + body.String() + "EOF\necho written"
	res := runCmd(t, e, cmd)
	if res.Stdout.Text != "written\n" || res.Stderr.Text != "" || res.ExitCode != 0 {
		t.Fatalf("stdout %q stderr %q exit %d", res.Stdout.Text, res.Stderr.Text, res.ExitCode)
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, []byte(body.String())) {
		t.Errorf("the file holds %d bytes, not the %d of the heredoc (%v)", len(got), body.Len(), err)
	}
}

// TestLongEcho: a 200 KiB echo prints its argument whole.
func TestLongEcho(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{MaxOutputBytes: 1 << 20})
	word := strings.Repeat("abcdefgh", 200<<10/8)
	res := runCmd(t, e, "echo "+word)
	if res.Stdout.Text != word+"\n" || res.ExitCode != 0 || res.Stderr.Text != "" {
		t.Errorf("%d bytes out, exit %d, stderr %q", len(res.Stdout.Text), res.ExitCode, res.Stderr.Text)
	}
}

// TestCommandAtArgLimit: commands one byte under, at and over the longest
// argv can carry all run.
func TestCommandAtArgLimit(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	for _, n := range []int{argLimit - 2, argLimit - 1, argLimit, argLimit + 1} {
		cmd := "echo ok #"
		cmd += strings.Repeat("x", n-len(cmd))
		res := runCmd(t, e, cmd)
		if res.Stdout.Text != "ok\n" || res.Stderr.Text != "" || res.ExitCode != 0 {
			t.Errorf("%d bytes: stdout %q stderr %q exit %d", n, res.Stdout.Text, res.Stderr.Text, res.ExitCode)
		}
	}
}

// TestLongCommandSemantics: a command read from a file behaves as `bash -c`
// does: the same output and exit code for each case, whether it is short
// (argv) or padded past the argv limit with a trailing comment.
func TestLongCommandSemantics(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	pad := "\n#" + strings.Repeat("p", argLimit)
	tests := []struct{ name, cmd string }{
		{"exit code", "false"},
		{"exit N", "echo a; exit 7; echo b"},
		{"syntax error", "echo a\nif then"},
		{"first $?", "echo $?"},
		{"$? after false", "false; echo $?"},
		{"heredoc", "cat <<EOF\nhello $((1+2))\nEOF"},
		{"function", "f() { echo in f; return 3; }; f; echo $?"},
		{"stdin is /dev/null", "cat; read x; echo read=$?"},
		{"no startup variable", "echo ${__dsh_command-unset} $#"},
		{"shell fd 3 closed", "[ -e /proc/$$/fd/3 ] && echo open || echo closed"},
		{"children see no command file", "ls -l /proc/self/fd/ | grep -c memfd"},
		{"exit trap", "trap 'echo bye' EXIT; exit 4"},
		{"line numbers", "echo $LINENO\nnosuch-dsh-command"},
		{"set -e", "set -e; false; echo not reached"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			short := runCmd(t, e, tc.cmd)
			long := runCmd(t, e, tc.cmd+pad)
			if long.Stdout.Text != short.Stdout.Text || long.ExitCode != short.ExitCode || long.Signal != short.Signal {
				t.Errorf("long: %q exit %d; short (argv): %q exit %d", long.Stdout.Text, long.ExitCode, short.Stdout.Text, short.ExitCode)
			}
			if tc.name != "syntax error" && long.Stderr.Text != short.Stderr.Text {
				t.Errorf("long stderr %q; short %q", long.Stderr.Text, short.Stderr.Text)
			}
		})
	}
	// What depends on the very end of the command: a final line
	// continuation, and trailing newlines (which a command substitution
	// would drop).
	for cmd, want := range map[string]string{
		"echo line\\\n":             "line\n",
		"printf '%s|' a \\\n b\n\n": "a|b|",
	} {
		res := runCmd(t, e, "#"+strings.Repeat("p", argLimit)+"\n"+cmd)
		if res.Stdout.Text != want || res.ExitCode != 0 {
			t.Errorf("%q: stdout %q exit %d; want %q", cmd, res.Stdout.Text, res.ExitCode, want)
		}
	}
}

// TestLongCommandCrowdedEnvironment: a command that fits argv alone, but
// not beside a large environment, still runs.
func TestLongCommandCrowdedEnvironment(t *testing.T) {
	t.Parallel()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &rl); err != nil {
		t.Fatal(err)
	}
	// The kernel's room for argv and envp together.
	room := min(uint64(6<<20), rl.Cur/4)
	base := []string{"PATH=" + os.Getenv("PATH")}
	for size := 0; uint64(size) < room-96<<10; size += 100 << 10 {
		base = append(base, fmt.Sprintf("FILL%d=%s", size, strings.Repeat("f", 100<<10-16)))
	}
	e := newExec(t, &Options{BaseEnv: base})
	cmd := "echo ok #" + strings.Repeat("x", 100<<10)
	if res := runCmd(t, e, cmd); res.Stdout.Text != "ok\n" || res.ExitCode != 0 {
		t.Errorf("stdout %q stderr %q exit %d", res.Stdout.Text, res.Stderr.Text, res.ExitCode)
	}
}

// TestNULInCommand: a command with a NUL byte is a typed error from
// Resolve, Run and Start, and no process is started for it.
func TestNULInCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	shell := filepath.Join(dir, "bash")
	bashPath, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!%s\ntouch %s\nexec %s \"$@\"\n", bashPath, started, bashPath)
	// The script is written here and copied into place by install: a file this
	// process had open for writing could be held open by a child another
	// test forks meanwhile, and its exec would fail (text file busy).
	if err := os.WriteFile(shell+".txt", []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("install", "-m", "700", shell+".txt", shell).CombinedOutput(); err != nil {
		t.Fatalf("install the wrapper shell: %v: %s", err, out)
	}
	e := newExec(t, &Options{Shell: shell})
	cmd := "echo a\x00b"
	check := func(what string, err error) {
		t.Helper()
		var ce *bash.CommandError
		if !errors.Is(err, bash.ErrNULInCommand) || !errors.As(err, &ce) || ce.Offset != 6 {
			t.Errorf("%s: err = %v; want a CommandError at byte 6", what, err)
		}
	}
	_, err = e.Resolve(context.Background(), bash.ExecRequest{Command: cmd})
	check("Resolve", err)
	spec := bash.ExecSpec{Command: cmd, Workdir: dir, Timeout: 10e9}
	_, err = e.Run(context.Background(), spec)
	check("Run", err)
	_, err = e.Start(context.Background(), spec)
	check("Start", err)
	if _, err := os.Stat(started); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shell was started for a command with a NUL byte (%v)", err)
	}
	// The wrapper shell works: the check above can see a start.
	if res := runCmd(t, e, "echo fine"); res.Stdout.Text != "fine\n" {
		t.Fatalf("wrapper shell: %+v", res)
	}
	if _, err := os.Stat(started); err != nil {
		t.Errorf("the wrapper shell did not record its start: %v", err)
	}
}
