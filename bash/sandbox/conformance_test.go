//go:build linux

package sandbox

import (
	"flag"
	"sync"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
)

var updateTranscript = flag.Bool("update", false, "rewrite toolbash/toolbashtest/testdata/transcript.txtar")

// conformant makes sandbox executors for the conformance suite: the spill
// files and the jails' /tmp directories in the test's own directory, the
// workspace the suite's directory.
func conformant(t *testing.T, c bashtest.Config) bash.Executor {
	return conformantIn(LayerAuto, "")(t, c)
}

// conformantIn makes conformant executors of one layer, whose jails start
// agent ("": plainAgent). They skip New's check (Options.noCheck), each
// made with the layer the check found here once (checkedLayer): the
// check is a jail of its own, which would start with each of the
// suite's hundred and fifty executors, and every other test's New runs
// it.
func conformantIn(layer Layer, agent string, deny ...string) func(*testing.T, bashtest.Config) bash.Executor {
	return func(t *testing.T, c bashtest.Config) bash.Executor {
		var rules *permission.ExecRules
		if len(deny) > 0 {
			var err error
			if rules, err = permission.NewExecRules(deny, ""); err != nil {
				t.Fatal(err)
			}
		}
		o := conformantOptions(t, c, layer)
		o.Agent, o.Local.ExecRules = agent, rules
		e, err := newSandbox(t, o)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// conformantOptions are the options of an executor of layer for the
// conformance suite's configuration c (see conformantIn).
func conformantOptions(t *testing.T, c bashtest.Config, layer Layer) *Options {
	return &Options{Layer: checkedLayer(t, layer), noCheck: true, Local: &local.Options{
		Cwd: c.Cwd, Timeout: c.Timeout, MaxTimeout: c.MaxTimeout,
		Grace: c.Grace, DrainDelay: c.DrainDelay, MaxOutputBytes: c.MaxOutputBytes,
		MaxTasksPerOwner: c.MaxTasksPerOwner, MaxTasks: c.MaxTasks,
		Env: c.Env, SpillDir: t.TempDir(),
	}, TempDir: t.TempDir()}
}

// checkedLayers holds, for each Layer asked of checkedLayer, the layer
// New's check found for it here.
var checkedLayers = struct {
	sync.Mutex
	m map[Layer]Layer
}{m: map[Layer]Layer{}}

// checkedLayer is the layer an executor of layer has here, found by New's
// check once per test process and layer (the test skips where there is
// no sandbox, as newSandbox says).
func checkedLayer(t *testing.T, layer Layer) Layer {
	t.Helper()
	checkedLayers.Lock()
	defer checkedLayers.Unlock()
	if l, ok := checkedLayers.m[layer]; ok {
		return l
	}
	e, err := newSandbox(t, &Options{Layer: layer, TempDir: t.TempDir(), Local: &local.Options{Cwd: t.TempDir(), SpillDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := e.Layer()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	checkedLayers.m[layer] = l
	return l
}

// TestConformance runs the executor contract of package bash against the
// sandbox.
func TestConformance(t *testing.T) {
	t.Parallel()
	bashtest.Run(t, conformant)
}

// TestTranscript checks that the model reads the same bytes through the
// sandbox as through the local executor. Its jails start the test binary:
// under -race the agent's own code is checked for races here (input,
// terminals, background tasks, kills, limits).
func TestTranscript(t *testing.T) {
	t.Parallel()
	toolbashtest.Transcript(t, conformantIn(LayerAuto, selfAgent(t)), "../../toolbash/toolbashtest/testdata/transcript.txtar", *updateTranscript)
}

// TestLandlockConformance runs the contract, and the transcript, against
// the Landlock layer.
func TestLandlockConformance(t *testing.T) {
	t.Parallel()
	t.Run("contract", func(t *testing.T) {
		t.Parallel()
		bashtest.Run(t, conformantIn(LayerLandlock, ""))
	})
	t.Run("transcript", func(t *testing.T) {
		t.Parallel()
		toolbashtest.Transcript(t, conformantIn(LayerLandlock, selfAgent(t)), "../../toolbash/toolbashtest/testdata/transcript.txtar", false)
	})
}

// TestTranscriptExecRules checks the transcript in jails whose agents
// trace every process to enforce deny rules at exec, with the race-built
// test binary as the agent (its tracing and reaping checked for races):
// the model reads the same bytes. (The whole contract runs through the
// tracer in bash/local; TestExecRulesInJail checks what the agent adds.)
func TestTranscriptExecRules(t *testing.T) {
	t.Parallel()
	toolbashtest.Transcript(t, conformantIn(LayerAuto, selfAgent(t), "zap"), "../../toolbash/toolbashtest/testdata/transcript.txtar", false)
}
