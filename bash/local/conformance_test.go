//go:build linux

package local

import (
	"flag"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
)

var updateTranscript = flag.Bool("update", false, "rewrite toolbash/toolbashtest/testdata/transcript.txtar")

// conformant makes executors for the conformance suite with the given
// containment.
func conformant(mode Containment) bashtest.NewFunc {
	return func(t *testing.T, c bashtest.Config) bash.Executor {
		e, err := New(testOptions(&Options{
			Cwd: c.Cwd, Timeout: c.Timeout, MaxTimeout: c.MaxTimeout,
			Grace: c.Grace, DrainDelay: c.DrainDelay, MaxOutputBytes: c.MaxOutputBytes,
			MaxTasksPerOwner: c.MaxTasksPerOwner, MaxTasks: c.MaxTasks,
			Env: c.Env, SpillDir: t.TempDir(), Containment: mode,
		}))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// TestConformance runs the executor contract of package bash against the
// local executor, under each containment this host allows. A process group
// cannot hold a process that calls setsid (see the package doc).
func TestConformance(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var opts []bashtest.Option
			if mode == ContainProcessGroup {
				opts = append(opts, bashtest.SetsidEscapes())
			}
			bashtest.Run(t, conformant(mode), opts...)
		})
	}
}

// TestTranscript checks the model-facing texts of the bash tools over the
// local executor against the golden file every executor shares.
func TestTranscript(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			if !*updateTranscript { // both would write the one golden file
				t.Parallel()
			}
			toolbashtest.Transcript(t, conformant(mode), "../../toolbash/toolbashtest/testdata/transcript.txtar", *updateTranscript)
		})
	}
}
