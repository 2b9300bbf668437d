//go:build linux

package remote

import (
	"context"
	"fmt"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestIDMap: a far side's task has one id of the executor's, the same at
// every sight; ids are unique across link generations and never reused;
// remote finds where an id lives until the task is forgotten.
func TestIDMap(t *testing.T) {
	m := newIDMap()
	a, b, again := ref{1, "bash-1"}, ref{1, "bash-2"}, ref{2, "bash-1"} // again: a new far side counts from bash-1
	ids := map[ref]bash.TaskID{}
	for i, r := range []ref{a, b, again} {
		ids[r] = m.local(r)
		if want := bash.TaskID(fmt.Sprintf("bash-%d", i+1)); ids[r] != want {
			t.Errorf("first sight of %v: %s, want %s", r, ids[r], want)
		}
	}
	for _, r := range []ref{a, b, again} {
		if id := m.local(r); id != ids[r] {
			t.Errorf("a second sight of %v: %s, want %s as at the first", r, id, ids[r])
		}
		if got, ok := m.remote(ids[r]); !ok || got != r {
			t.Errorf("remote(%s) = %v, %v; want %v", ids[r], got, ok, r)
		}
	}
	if _, ok := m.remote("bash-9"); ok {
		t.Error("remote of an id never given out found a task")
	}
	if id := m.local(ref{1, ""}); id != "" {
		t.Errorf("no task: %q, want none", id)
	}
	m.forget(ids[b])
	if _, ok := m.remote(ids[b]); ok {
		t.Errorf("remote(%s) found a forgotten task", ids[b])
	}
	if id := m.local(b); id != "bash-4" {
		t.Errorf("a forgotten task seen again: %s, want a new id, bash-4", id)
	}
	m.forgetGen(1)
	for id, want := range map[bash.TaskID]bool{ids[a]: false, "bash-4": false, ids[again]: true} {
		if _, ok := m.remote(id); ok != want {
			t.Errorf("after forgetGen(1), remote(%s) found a task: %v, want %v", id, ok, want)
		}
	}
}

// TestTaskIDsAgree: the id Start returns is the one the task's end is
// told with, and the one calls about the task take.
func TestTaskIDsAgree(t *testing.T) {
	s := servedPipe(t, &local.Options{SpillDir: t.TempDir()})
	defer s.Close()
	e := s.Executor
	ended := make(chan bash.Task, 10)
	defer e.OnTaskDone(func(task bash.Task) { ended <- task })()
	for _, want := range []bash.TaskID{"bash-1", "bash-2"} {
		task := start(t, e, resolve(t, e, "echo out", "alice"))
		if task.ID != want {
			t.Errorf("Start returned %s, want %s", task.ID, want)
		}
		if end := testwait.Recv(t, ended, "end of "+string(task.ID)); end.ID != task.ID {
			t.Fatalf("the end of the task Start called %s was told as the end of %s", task.ID, end.ID)
		}
		err := testwait.Call("calls about "+string(task.ID), func(ctx context.Context) error {
			if got, err := e.Get(ctx, task.ID); err != nil || got.ID != task.ID || !got.Done() {
				t.Errorf("Get(%s) = %+v, %v", task.ID, got, err)
			}
			if owner, err := e.OwnerOf(ctx, task.ID); err != nil || owner != "alice" {
				t.Errorf("OwnerOf(%s) = %q, %v", task.ID, owner, err)
			}
			if out, err := e.ReadOutput(ctx, task.ID); err != nil || out.Stdout.Text != "out\n" {
				t.Errorf("ReadOutput(%s) = %+v, %v", task.ID, out, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
