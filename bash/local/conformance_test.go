//go:build linux

package local

import (
	"flag"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
)

var updateTranscript = flag.Bool("update", false, "rewrite toolbash/toolbashtest/testdata/transcript.txtar")

// conformant makes executors for the conformance suite with the given
// containment; with rules, every exec is checked against them.
func conformant(mode Containment, rules ...string) bashtest.NewFunc {
	return func(t *testing.T, c bashtest.Config) bash.Executor {
		var er *permission.ExecRules
		if len(rules) > 0 {
			var err error
			if er, err = permission.NewExecRules(rules, ""); err != nil {
				t.Fatal(err)
			}
		}
		e, err := New(testOptions(&Options{
			Cwd: c.Cwd, Timeout: c.Timeout, MaxTimeout: c.MaxTimeout,
			Grace: c.Grace, DrainDelay: c.DrainDelay, MaxOutputBytes: c.MaxOutputBytes,
			MaxTasksPerOwner: c.MaxTasksPerOwner, MaxTasks: c.MaxTasks,
			Env: c.Env, SpillDir: t.TempDir(), Containment: mode, ExecRules: er,
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

// TestConformanceExecRules runs the contract with deny rules enforced at
// exec, which trace every process of every command: what the rules do
// not refuse behaves as it does untraced. (The transcript is read through
// the tracer in bash/sandbox's TestTranscriptExecRules.)
func TestConformanceExecRules(t *testing.T) {
	t.Parallel()
	mode := ContainProcessGroup
	var opts []bashtest.Option
	if cgroupsUsable() == nil {
		mode = ContainCgroup
	} else {
		opts = append(opts, bashtest.SetsidEscapes())
	}
	bashtest.Run(t, conformant(mode, "zap", "git push --force"), opts...)
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
