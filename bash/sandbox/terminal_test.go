//go:build linux

package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestTerminalTIOCSTI: a command in a terminal of its own (a tty task)
// cannot type into it with TIOCSTI, in the jail and in the Landlock
// layer; the unsandboxed executor can, which shows that the test would
// see it. (A typed line would be read as if the model had sent it, and
// the filter is what stops TIOCSTI on any terminal a command holds.)
func TestTerminalTIOCSTI(t *testing.T) {
	t.Parallel()
	for _, layer := range []Layer{LayerJail, LayerLandlock, LayerAuto} {
		t.Run(map[Layer]string{LayerJail: "jail", LayerLandlock: "landlock", LayerAuto: "local"}[layer], func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			lo := &local.Options{Cwd: ws, SpillDir: t.TempDir()}
			var e bash.Executor
			var err error
			if layer == LayerAuto {
				e, err = local.New(lo)
			} else {
				e, err = newSandbox(t, &Options{Layer: layer, Local: lo})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			got := terminalOutput(t, e, probeIn(ws, "tiocsti"))
			// Unsandboxed, the terminal echoes the typed "#" too.
			if sandboxed := layer != LayerAuto; sandboxed && got != "tiocsti: operation not permitted\n" ||
				!sandboxed && !strings.HasSuffix(got, "tiocsti: succeeded\n") {
				t.Errorf("TIOCSTI from a terminal task (sandboxed: %v): %q", sandboxed, got)
			}
		})
	}
}

// terminalOutput runs cmd as a task in a terminal, and returns what it
// printed once it ended.
func terminalOutput(t *testing.T, e bash.Executor, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	ended := make(chan bash.Task, 1)
	defer e.OnTaskDone(func(tk bash.Task) { ended <- tk })()
	spec, err := e.Resolve(ctx, bash.ExecRequest{Command: cmd, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	spec.Terminal = &bash.TermSize{}
	task, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, ended, "the end of the terminal task")
	r, err := e.ReadOutput(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return r.Stdout.Text
}
