//go:build linux

package sandbox

import (
	"context"
	"errors"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
)

// TestTempDirCovered: where the executor's temporary directory is not
// /tmp (TMPDIR=/var/tmp/… on the server), commands see a private one in
// its place that they can write, as they would with the same TMPDIR; what
// they write there never reaches the host's directory.
func TestTempDirCovered(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	// Outside /tmp, whose private one would cover it anyway.
	tmp, err := os.MkdirTemp("/var/tmp", "dsh-test-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	e, err := newSandbox(t, &Options{TempDir: tmp, Local: &local.Options{Cwd: ws,
		Env: []string{"TMPDIR=" + tmp}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	spec, err := e.Resolve(ctx, bash.ExecRequest{Owner: "alice", Workspace: ws, Workdir: ws,
		Command: `f=$(mktemp) && echo written > "$f" && cat "$f" && ls -A "$TMPDIR" | wc -l`})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout.Text != "written\n1\n" {
		t.Errorf("a temporary file in TMPDIR: stdout %q, stderr %q", res.Stdout.Text, res.Stderr.Text)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "tmp.*"))
	if len(left) > 0 {
		t.Errorf("the command's temporary file reached the host: %v", left)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Error(err)
	}
}

// TestUnsandboxedCall: a spec marked Unsandboxed (the user said yes to
// that one call) runs outside the sandbox, in both layers: it writes
// where the same command, unmarked, cannot; the session's next command is
// sandboxed again.
func TestUnsandboxedCall(t *testing.T) {
	t.Parallel()
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		t.Run(layer.String(), func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			outside, err := os.MkdirTemp("/var/tmp", "dsh-test-outside-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(outside) })
			e, err := newSandbox(t, &Options{Layer: layer, AllowUnsandboxed: true, Local: &local.Options{Cwd: ws}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			try := func(name string, unsandboxed bool) bool {
				spec, err := e.Resolve(ctx, bash.ExecRequest{Owner: "o", Workspace: ws, Workdir: ws,
					Command: "echo x > " + filepath.Join(outside, name)})
				if err != nil {
					t.Fatal(err)
				}
				spec.Unsandboxed = unsandboxed
				if _, err := e.Run(ctx, spec); err != nil {
					t.Fatal(err)
				}
				_, err = os.Stat(filepath.Join(outside, name))
				return err == nil
			}
			if try("sandboxed", false) || !try("unsandboxed", true) || try("sandboxed-again", false) {
				t.Error("want only the Unsandboxed call to write outside the workspace")
			}
			// One yes is one call: what the command leaves running outside is
			// stopped when it ends, never adopted as a task.
			gate := filepath.Join(ws, "gate")
			if err := unix.Mkfifo(gate, 0o600); err != nil {
				t.Fatal(err)
			}
			spec, _ := e.Resolve(ctx, bash.ExecRequest{Owner: "o", Workspace: ws, Workdir: ws,
				Command: "(read < " + gate + "; touch " + filepath.Join(outside, "late") + ") & echo x"})
			spec.Unsandboxed = true
			res, err := e.Run(ctx, spec)
			if err != nil || res.Adopted != "" || !res.LeftoversKilled || !res.LeftoversOutside {
				t.Errorf("leftovers of a run outside: %+v, %v; want them killed, not adopted", res, err)
			}
			if fd, err := unix.Open(gate, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
				unix.Close(fd)
				t.Error("the leftover still reads its gate")
			}
		})
	}
}

// TestSandboxFinal: without AllowUnsandboxed, a spec marked Unsandboxed
// fails with bash.ErrSandboxFinal and runs nothing.
func TestSandboxFinal(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	e, err := newSandbox(t, &Options{Local: &local.Options{Cwd: ws}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	spec, err := e.Resolve(ctx, bash.ExecRequest{Owner: "o", Workspace: ws, Workdir: ws, Command: "touch ran"})
	if err != nil {
		t.Fatal(err)
	}
	spec.Unsandboxed = true
	if _, err := e.Run(ctx, spec); !errors.Is(err, bash.ErrSandboxFinal) {
		t.Errorf("Run: %v, want ErrSandboxFinal", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("the command ran")
	}
}
