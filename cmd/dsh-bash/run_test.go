//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	want := "dsh-bash run: the sandbox refuses the workspace " + home + ": it is or holds your home directory " + home + ", which sandboxed commands could then change. Run it in a project directory, or name one with --cwd DIR\n"
	if _, err := os.Stat(filepath.Join(home, "ran")); code != 2 || out != "" || errOut != want || err == nil {
		t.Errorf("run: exit %d, stdout %q, stderr %q (ran: %v); want exit 2 and %q", code, out, errOut, err == nil, want)
	}
}
