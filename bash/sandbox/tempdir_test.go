//go:build linux

package sandbox

import (
	"context"
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
