//go:build linux

package bashtest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) limitTests(t *testing.T) {
	parallel(t, "per owner and per executor", s.taskLimits)
	parallel(t, "ended tasks do not count", s.endedDoNotCount)
}

// startRefused checks that Start of a command for owner is refused with a
// TaskLimitError for scope and limit.
func (h *harness) startRefused(cmd, owner string, scope bash.LimitScope, limit int) {
	h.t.Helper()
	_, err := h.e.Start(h.ctx(), h.resolve(bash.ExecRequest{Command: cmd, Owner: owner}))
	var le *bash.TaskLimitError
	if !errors.As(err, &le) || le.Scope != scope || le.Limit != limit || !errors.Is(err, bash.ErrTaskLimit) {
		h.t.Errorf("Start for %q: %v (%T); want a *bash.TaskLimitError{Scope: %v, Limit: %d}", owner, err, err, scope, limit)
	}
}

func (s *suite) taskLimits(t *testing.T) {
	h := s.harness(t, func(c *Config) { c.MaxTasksPerOwner, c.MaxTasks = 2, 3 })
	ran := filepath.Join(h.cfg.Cwd, "ran")
	refused := "touch " + quote(ran)
	a1 := h.start("sleep 30", "alice")
	h.start("sleep 30", "alice")
	h.startRefused(refused, "alice", bash.PerOwner, 2)
	h.start("sleep 30", "bob")
	h.startRefused(refused, "carol", bash.PerExecutor, 3)
	h.startRefused(refused, "", bash.PerExecutor, 3)
	h.kill(a1.ID)
	h.start("sleep 30", "alice") // a killed task no longer counts
	h.close()
	if _, err := os.Stat(ran); err == nil {
		t.Error("a refused Start ran its command")
	}
}

func (s *suite) endedDoNotCount(t *testing.T) {
	h := s.harness(t, func(c *Config) { c.MaxTasksPerOwner, c.MaxTasks = 1, 1 })
	l := h.listen()
	for range 3 {
		h.wait(l, h.start("true", "alice").ID)
	}
	if _, err := h.e.Start(h.ctx(), h.resolve(bash.ExecRequest{Command: "true", Workdir: "missing"})); errors.Is(err, bash.ErrTaskLimit) {
		t.Errorf("Start after ended tasks: %v", err)
	}
	h.start("sleep 30", "bob") // the failed task does not count either
}
