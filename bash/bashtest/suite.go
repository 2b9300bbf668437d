//go:build linux

package bashtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// suite is the conformance suite for one executor constructor.
type suite struct {
	newExec NewFunc
	opts    options
	// common and spilling are the executors the tests that may share one
	// share: of the default Config, and of a MaxOutputBytes of 1000.
	common, spilling *harness
}

// Run runs the whole contract of package bash against executors made by
// newExec, in subtests each named after the rule it checks. A subtest
// that closes its executor, configures it otherwise, or looks at all its
// tasks or all its listeners' calls has an executor of its own; the others
// share one per Config (see suite.shared), made before the subtests start
// and closed, and checked as each executor is, once they have all ended.
// The subtests run in parallel (t.Parallel), so they are over when t's
// test function and its other subtests are, not when Run returns: clean up
// what they use with t.Cleanup, not defer.
func Run(t *testing.T, newExec NewFunc, opts ...Option) {
	s := &suite{newExec: newExec}
	for _, o := range opts {
		o(&s.opts)
	}
	s.common = s.sharedHarness(t, nil)
	s.spilling = s.sharedHarness(t, func(c *Config) { c.MaxOutputBytes = 1000 })
	parallel(t, "Resolve", s.resolveTests)
	parallel(t, "Run", s.runTests)
	parallel(t, "Output", s.outputTests)
	parallel(t, "Tasks", s.taskTests)
	parallel(t, "Kill", s.killTests)
	parallel(t, "Input", s.inputTests)
	parallel(t, "Terminal", s.terminalTests)
	parallel(t, "WaitingInput", s.waitingTests)
	parallel(t, "TaskLimits", s.limitTests)
	parallel(t, "OnTaskDone", s.listenerTests)
	parallel(t, "Close", s.closeTests)
}

// harness makes an executor for one test, with the suite's default Config
// edited by edit (which may be nil): for a test that closes it,
// configures it otherwise than the shared ones are, or looks at all its
// tasks (List) or at all its listeners' calls.
func (s *suite) harness(t *testing.T, edit func(*Config)) *harness {
	t.Helper()
	return newHarness(t, s.newExec, s.opts, edit)
}

// sharedHarness makes, on the goroutine of Run's t, an executor for the
// tests that share one, with the suite's default Config edited by edit
// (which may be nil), closed and checked when t's subtests have ended.
// Its task limits are far above the default's: the tests that share it
// leave tasks running (asleep, or waiting for input) for Close to stop,
// and a limit reached would refuse another test's Start, or kill its
// leftovers; the limits are tested on executors of their own.
func (s *suite) sharedHarness(t *testing.T, edit func(*Config)) *harness {
	t.Helper()
	h := newHarness(t, s.newExec, s.opts, func(c *Config) {
		c.MaxTasksPerOwner, c.MaxTasks = 64, 256
		if edit != nil {
			edit(c)
		}
	})
	unlabelGoroutine() // t's goroutine goes on to other work than the executor's
	h.shared = true
	return h
}

// shared is the executor of, shared with other tests, as the test t uses
// it: t's goroutine, and what it starts, count as the executor's (see
// labelGoroutine), its tags are its own, and its FIFOs are in a
// directory of its own in the executor's default working directory.
func (s *suite) shared(t *testing.T, of *harness) *harness {
	t.Helper()
	id := fmt.Sprintf("%s.%d", of.mark, harnessSeq.Add(1))
	dir := filepath.Join(of.cfg.Cwd, "test"+id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	labelGoroutine(of.mark)
	return &harness{t: t, e: of.e, cfg: of.cfg, id: id, mark: of.mark, dir: dir, opts: of.opts, shared: true}
}

// parallel runs a leaf test of the suite side by side with the others:
// most of their time goes on waiting for processes (grace periods, drain
// delays, timeouts).
func parallel(t *testing.T, name string, f func(*testing.T)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		f(t)
	})
}
