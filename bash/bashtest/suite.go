//go:build linux

package bashtest

import "testing"

// suite is the conformance suite for one executor constructor.
type suite struct {
	newExec NewFunc
	opts    options
}

// Run runs the whole contract of package bash against executors made by
// newExec, one per subtest, each named after the rule it checks. The
// subtests run in parallel (t.Parallel), so they are over when t's test
// function and its other subtests are, not when Run returns: clean up
// what they use with t.Cleanup, not defer.
func Run(t *testing.T, newExec NewFunc, opts ...Option) {
	s := &suite{newExec: newExec}
	for _, o := range opts {
		o(&s.opts)
	}
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
// edited by edit (which may be nil).
func (s *suite) harness(t *testing.T, edit func(*Config)) *harness {
	t.Helper()
	return newHarness(t, s.newExec, s.opts, edit)
}

// parallel runs a leaf test of the suite side by side with the others:
// each has an executor of its own, and most of their time goes on waiting
// for processes (grace periods, drain delays, timeouts).
func parallel(t *testing.T, name string, f func(*testing.T)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		f(t)
	})
}
