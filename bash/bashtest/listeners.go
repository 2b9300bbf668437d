//go:build linux

package bashtest

import (
	"testing"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) listenerTests(t *testing.T) {
	parallel(t, "exactly once per task of every kind", s.exactlyOnce)
	parallel(t, "a panicking listener does not starve the others", s.panickingListener)
	parallel(t, "unsubscribe", s.unsubscribe)
	parallel(t, "never once Close has begun", s.noneAfterClose)
}

// exactlyOnce: two listeners each hear once of a completed, a killed, an
// adopted and a failed task, and of nothing else (a foreground run that
// leaves nothing behind is no task).
func (s *suite) exactlyOnce(t *testing.T) {
	h := s.harness(t, nil)
	l1, l2 := h.listen(), h.listen()
	gate := h.fifo("gate")
	completed := h.start("exit 3", "a").ID
	killed := h.start("sleep 30", "a").ID
	h.kill(killed)
	adopted := h.run(bash.ExecRequest{Command: "(read < " + quote(gate) + ") & true", Owner: "b"}).Adopted
	if adopted == "" {
		t.Fatal("no adopted task")
	}
	h.release(gate)
	failed, _ := h.e.Start(h.ctx(), h.resolve(bash.ExecRequest{Command: "true", Workdir: "missing"}))
	h.runCmd("echo no task")
	want := map[bash.TaskID]bash.TaskStatus{completed: bash.StatusCompleted, killed: bash.StatusKilled,
		adopted: bash.StatusCompleted, failed.ID: bash.StatusFailed}
	for id := range want {
		h.wait(l1, id)
		h.wait(l2, id)
	}
	h.close() // every call that will ever come has come
	for name, l := range map[string]*doneLog{"first": l1, "second": l2} {
		calls := l.all()
		if len(calls) != len(want) {
			t.Errorf("the %s listener heard %d ends; want %d: %+v", name, len(calls), len(want), calls)
		}
		for id, status := range want {
			if got := l.of(id); len(got) != 1 || got[0].Status != status {
				t.Errorf("the %s listener heard of %s: %+v; want once, %s", name, id, got, status)
			}
		}
	}
}

func (s *suite) panickingListener(t *testing.T) {
	h := s.harness(t, nil)
	h.e.OnTaskDone(func(bash.Task) { panic("listener panics") })
	l := h.listen()
	h.e.OnTaskDone(func(bash.Task) { panic("another listener panics") })
	for range 2 { // the executor still works after a panic
		task := h.start("true", "")
		if end := h.wait(l, task.ID); end.Status != bash.StatusCompleted {
			t.Errorf("heard %+v; want completed", end)
		}
	}
}

func (s *suite) unsubscribe(t *testing.T) {
	h := s.harness(t, nil)
	never := newDoneLog()
	h.e.OnTaskDone(never.record)() // subscribed, then unsubscribed
	once := h.listen()
	h.e.OnTaskDone(once.record)() // a second registration, unsubscribed
	task := h.start("true", "")
	h.wait(once, task.ID)
	h.close()
	if n := len(never.all()); n != 0 {
		t.Errorf("an unsubscribed listener was called %d times", n)
	}
	if n := len(once.of(task.ID)); n != 1 {
		t.Errorf("a listener registered twice, once unsubscribed, heard %d times; want once", n)
	}
}

// noneAfterClose: the listener hears nothing of tasks Close stops, and one
// registered after Close is never called.
func (s *suite) noneAfterClose(t *testing.T) {
	h := s.harness(t, nil)
	l := h.listen()
	h.start("sleep 30", "a")
	h.run(bash.ExecRequest{Command: "sleep 30 & true", Owner: "a"})
	h.close()
	late := newDoneLog()
	h.e.OnTaskDone(late.record)() // registering and unsubscribing after Close are harmless
	if calls := append(l.all(), late.all()...); len(calls) != 0 {
		t.Errorf("listeners heard %+v after Close began", calls)
	}
}
