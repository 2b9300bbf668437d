//go:build linux

package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunCwd: run takes --cwd as mcp and doctor do: the workspace, where
// the call runs, and what a relative --workdir starts from; a --workdir
// outside it is the workspace, wherever it was given from.
func TestRunCwd(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	ws, other := filepath.Join(parent, "ws"), filepath.Join(parent, "other")
	for _, d := range []string{filepath.Join(ws, "sub"), filepath.Join(other, "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cwd", ws}, ws},
		{[]string{"--cwd", ws, "--workdir", "sub"}, filepath.Join(ws, "sub")},
		{[]string{"--cwd", ws, "--workdir", "../other/deep"}, filepath.Join(other, "deep")},
	} {
		args := append(append([]string{"run"}, tc.args...), "--", "pwd")
		out, errOut, code := dshBash(t, t.TempDir(), args...)
		if code != 0 || out != tc.want+"\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %s", args, code, out, errOut, tc.want)
		}
	}
	if _, errOut, code := dshBash(t, t.TempDir(), "run", "--cwd", "/nonexistent/dsh", "--", "true"); code != 2 || !strings.HasPrefix(errOut, "dsh-bash run: --cwd /nonexistent/dsh: ") {
		t.Errorf("a bad --cwd: exit %d, stderr %q", code, errOut)
	}
}

// TestHomeWorkspaceSaid: started in the home directory under the sandbox,
// run refuses at once in the user's words (bad usage: exit 2) and runs
// nothing.
func TestHomeWorkspaceSaid(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	home := t.TempDir()
	env := []string{"HOME=" + home, "DSH_BASH_SANDBOX=on"}
	out, errOut, code := dshBashEnv(t, home, env, "run", "--", "touch ran")
	errOut = withoutOthersCgroups(errOut)
	want := "dsh-bash run: the sandbox refuses the workspace " + home + ": it is or holds your home directory " + home + ", which sandboxed commands could then change. Run it in a project directory, or name one with --cwd DIR\n"
	if _, err := os.Stat(filepath.Join(home, "ran")); code != 2 || out != "" || errOut != want || err == nil {
		t.Errorf("run: exit %d, stdout %q, stderr %q (ran: %v); want exit 2 and %q", code, out, errOut, err == nil, want)
	}
}

// keptDir runs a command whose output run truncates, in TMPDIR tmp, and
// returns the directory that keeps it, which run's stderr names.
func keptDir(t *testing.T, tmp string) string {
	t.Helper()
	out, errOut, code := dshBashEnv(t, t.TempDir(), []string{"TMPDIR=" + tmp}, "run", "--max-output-bytes", "10", "--", "seq 1000")
	_, path, ok := strings.Cut(strings.TrimSuffix(out, "]"), "[output truncated; full output: ")
	dir := filepath.Dir(filepath.Dir(path))
	if code != 0 || !ok || !strings.Contains(errOut, "dsh-bash run: the full output stays in "+dir+" until about ") || !strings.Contains(errOut, "(24h0m0s; the first dsh-bash to start after that removes it)") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the kept directory named on stderr", code, out, errOut)
	}
	return dir
}

// TestRunKeptOutputGoes: run says where it keeps the full output of a
// truncated stream, and until when; a dsh-bash that starts once nothing
// has been written there for 24 hours removes it, saying so, and leaves
// the newer ones. A run that kept nothing says nothing.
func TestRunKeptOutputGoes(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	old, recent := keptDir(t, tmp), keptDir(t, tmp)
	day := time.Now().Add(-25 * time.Hour)
	filepath.WalkDir(old, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Chtimes(p, day, day)
		}
		return err
	})
	_, errOut, code := dshBashEnv(t, t.TempDir(), []string{"TMPDIR=" + tmp}, "run", "--", "true")
	if _, err := os.Stat(old); code != 0 || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(errOut, "removed "+old+", the output a dsh-bash run kept, unused for 24h0m0s") {
		t.Errorf("the next start: exit %d, stderr %q; the day-old directory: %v", code, errOut, err)
	}
	if strings.Contains(errOut, "stays in") {
		t.Errorf("a run that kept nothing: stderr %q", errOut)
	}
	if _, err := exec.LookPath("bwrap"); err == nil {
		// The jail's spill directory is made, and goes with nothing kept.
		_, errOut, _ = dshBashEnv(t, t.TempDir(), []string{"TMPDIR=" + tmp}, "run", "--sandbox=on", "--", "true")
		if strings.Contains(errOut, "stays in") {
			t.Errorf("a sandboxed run that kept nothing: stderr %q", errOut)
		}
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("the recent directory: %v", err)
	}
}
