//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
)

// TestWorkspaceRefused: a sandbox will not make writable a workspace that
// holds the home directory (the root does) or the directories it keeps its
// sessions' private files in, nor one inside those; a project directory is
// fine. A refused workspace starts no jail and no command.
func TestWorkspaceRefused(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home, tmp, spill, project := filepath.Join(base, "home", "u"), filepath.Join(base, "tmp"), filepath.Join(base, "spill"), filepath.Join(base, "work", "p")
	for _, d := range []string{home, tmp, spill, project, filepath.Join(tmp, "dsh-jails-1-2-3", "tmp-x"), filepath.Join(spill, "dsh-spill-1-2-3", "alice")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home, filepath.Join(base, "work", "home-link")); err != nil {
		t.Fatal(err)
	}
	e, err := newSandbox(t, &Options{Policy: Policy{Home: home}, TempDir: tmp,
		Local: &local.Options{Cwd: project, SpillDir: spill}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tests := []struct {
		ws, holds string
		problem   error // nil: allowed
	}{
		{"/", home, bash.ErrWorkspaceHome},
		{home, home, bash.ErrWorkspaceHome},
		{filepath.Dir(home), home, bash.ErrWorkspaceHome},
		{filepath.Join(base, "work", "home-link"), home, bash.ErrWorkspaceHome},
		{tmp, tmp, bash.ErrWorkspaceServer},
		{spill, spill, bash.ErrWorkspaceServer},
		{filepath.Join(tmp, "dsh-jails-1-2-3", "tmp-x"), filepath.Join(tmp, "dsh-jails-1-2-3"), bash.ErrWorkspaceServer},
		{filepath.Join(spill, "dsh-spill-1-2-3", "alice"), filepath.Join(spill, "dsh-spill-1-2-3"), bash.ErrWorkspaceServer},
		{project, "", nil},
		{filepath.Join(home, "project"), "", nil}, // inside home is fine
	}
	ctx := context.Background()
	for _, tt := range tests {
		req := bash.ExecRequest{Command: "echo ran", Owner: "o", Workspace: tt.ws, Workdir: project}
		spec, err := e.Resolve(ctx, req)
		var we *bash.WorkspaceError
		if tt.problem == nil {
			if err != nil {
				t.Errorf("%s: %v; want it allowed", tt.ws, err)
			}
			continue
		}
		if !errors.As(err, &we) || !errors.Is(err, tt.problem) || we.Holds != tt.holds {
			t.Errorf("%s: %v; want a WorkspaceError: %v (%s)", tt.ws, err, tt.problem, tt.holds)
		}
		// A spec made without Resolve is refused at the jail.
		spec = bash.ExecSpec{Command: "echo ran", Owner: "o", Workspace: tt.ws, Workdir: project, Timeout: 10e9}
		if res, err := e.Run(ctx, spec); !errors.As(err, &we) {
			t.Errorf("%s: Run without Resolve: %+v, %v; want a WorkspaceError", tt.ws, res, err)
		}
	}
}

// TestWorkdirOutsideSandbox: a working directory that exists on the host
// but not in the jail (under /tmp, which the jail has its own of) is a
// WorkdirError that says so, not one that says it does not exist; one that
// exists nowhere still does not exist.
func TestWorkdirOutsideSandbox(t *testing.T) {
	t.Parallel()
	ws, err := os.MkdirTemp("/var/tmp", "dsh-test-ws-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(ws)
	e, err := newSandbox(t, &Options{Local: &local.Options{Cwd: ws}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	hostOnly := t.TempDir() // under /tmp
	for _, tt := range []struct {
		dir  string
		want error
	}{{hostOnly, bash.ErrOutsideSandbox}, {filepath.Join(hostOnly, "missing"), os.ErrNotExist}} {
		ctx := context.Background()
		spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "pwd", Owner: "o", Workspace: ws, Workdir: tt.dir})
		if err == nil {
			_, err = e.Run(ctx, spec)
		}
		var we *bash.WorkdirError
		if !errors.As(err, &we) || !errors.Is(err, tt.want) {
			t.Errorf("workdir %s: %v; want a WorkdirError for %v", tt.dir, err, tt.want)
		}
	}
}

// TestCacheEnvWritable: the caches the commands' environment names
// (GOCACHE, each GOPATH entry, …) are writable in the jail, unless the
// caches are locked; a cache variable naming the root or the home
// directory opens nothing.
func TestCacheEnvWritable(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("/var/tmp", "dsh-test-caches-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	dirs := map[string]string{"gocache": "", "gp1": "", "gp2": ""}
	for _, d := range []string{ws, home, filepath.Join(base, "gocache"), filepath.Join(base, "gp1"), filepath.Join(base, "gp2")} {
		os.MkdirAll(d, 0o755)
	}
	env := []string{"HOME=" + home, "GOCACHE=" + filepath.Join(base, "gocache"),
		"GOPATH=" + filepath.Join(base, "gp1") + ":" + filepath.Join(base, "gp2"),
		"XDG_CACHE_HOME=/", "PIP_CACHE_DIR=" + base}
	cmd := ""
	for d := range dirs {
		cmd += "touch " + filepath.Join(base, d, "f") + " 2>/dev/null && echo " + d + "; "
	}
	cmd += "touch " + filepath.Join(base, "top") + " 2>/dev/null && echo base; touch /etc/dsh-test-planted 2>/dev/null && echo etc; true"
	for _, lock := range []bool{false, true} {
		e, err := newSandbox(t, &Options{Policy: Policy{Home: home, LockCaches: lock}, Local: &local.Options{Cwd: ws, Env: env}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		spec, err := e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: "o", Workspace: ws, Workdir: ws})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(ctx, spec)
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		for d := range dirs {
			if got := strings.Contains(res.Stdout.Text, d+"\n"); got == lock {
				t.Errorf("locked=%v: %s writable=%v (stdout %q)", lock, d, got, res.Stdout.Text)
			}
		}
		if strings.Contains(res.Stdout.Text, "base\n") || strings.Contains(res.Stdout.Text, "etc\n") {
			t.Errorf("locked=%v: a cache variable naming / or a directory holding home opened it: %q", lock, res.Stdout.Text)
		}
	}
}
