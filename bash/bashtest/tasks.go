//go:build linux

package bashtest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) taskTests(t *testing.T) {
	parallel(t, "Start returns at once with a running task", s.startAtOnce)
	parallel(t, "no timeout applies to a background task", s.noTimeout)
	parallel(t, "owner is stored and never changes", s.ownerStored)
	parallel(t, "List is oldest first", s.listOrder)
	parallel(t, "ReadOutput is incremental, the final read holds the rest", s.incrementalReads)
	parallel(t, "a task ends with its last process, not its shell", s.endsWithTree)
	parallel(t, "unknown task id is an UnknownTaskError", s.unknownTask)
	parallel(t, "failed Start is a StartError and a failed task", s.failedStart)
}

func (s *suite) startAtOnce(t *testing.T) {
	h := s.shared(t, s.common)
	cmd := "env " + h.tag("sleep") + " sleep 30"
	begin := time.Now()
	task := h.start(cmd, "alice")
	h.atOnce("Start", begin)
	if task.ID == "" || task.Status != bash.StatusRunning || task.Command != cmd || task.Owner != "alice" || task.Err != nil {
		t.Errorf("Start returned %+v; want a running task of alice with its command", task)
	}
	if got := h.get(task.ID); got != task {
		t.Errorf("Get(%s) = %+v; Start returned %+v", task.ID, got, task)
	}
	h.waitLive(h.tag("sleep"))
}

func (s *suite) noTimeout(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	spec := h.resolve(bash.ExecRequest{Command: "sleep 0.5; echo done", Timeout: 50 * time.Millisecond})
	task, err := h.e.Start(h.ctx(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if end := h.wait(l, task.ID); end.Status != bash.StatusCompleted || end.ExitCode != 0 || end.Signal != "" {
		t.Errorf("task %+v; want completed with exit code 0: no timeout applies", end)
	}
	if r := h.read(task.ID); r.Stdout.Text != "done\n" {
		t.Errorf("output %q; want %q", r.Stdout.Text, "done\n")
	}
}

func (s *suite) ownerStored(t *testing.T) {
	h := s.harness(t, nil)
	l := h.listen()
	owners := []string{"", "alice", "a session/with spaces", "bob"}
	var ids []bash.TaskID
	for _, owner := range owners {
		ids = append(ids, h.start("true", owner).ID)
	}
	for i, id := range ids {
		end := h.wait(l, id)
		got, err := h.e.OwnerOf(h.ctx(), id)
		if err != nil || got != owners[i] || end.Owner != owners[i] || h.get(id).Owner != owners[i] {
			t.Errorf("task %s of %q: OwnerOf %q (%v), listener %q, Get %q", id, owners[i], got, err, end.Owner, h.get(id).Owner)
		}
	}
	list, err := h.e.List(bg)
	if err != nil || len(list) != len(ids) {
		t.Fatalf("List: %d tasks, %v; want %d", len(list), err, len(ids))
	}
	for i, task := range list {
		if task.Owner != owners[i] {
			t.Errorf("List: task %s has owner %q; want %q", task.ID, task.Owner, owners[i])
		}
	}
}

// listOrder: background, failed and adopted tasks are listed in the order
// they were made.
func (s *suite) listOrder(t *testing.T) {
	h := s.harness(t, nil)
	var want []bash.TaskID
	want = append(want, h.start("sleep 30", "a").ID)
	failed, _ := h.e.Start(h.ctx(), h.resolve(bash.ExecRequest{Command: "true", Workdir: "missing"}))
	want = append(want, failed.ID)
	want = append(want, h.run(bash.ExecRequest{Command: "sleep 30 & true", Owner: "b"}).Adopted)
	want = append(want, h.start("true", "").ID)
	list, err := h.e.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	var got []bash.TaskID
	for _, task := range list {
		got = append(got, task.ID)
	}
	distinct := map[bash.TaskID]bool{}
	for _, id := range got {
		distinct[id] = true
	}
	if !slices.Equal(got, want) || slices.Contains(got, "") || len(distinct) != len(got) {
		t.Errorf("List ids %q; want %q, distinct", got, want)
	}
}

func (s *suite) incrementalReads(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	gate := h.fifo("gate")
	task := h.start("echo one; echo err1 >&2; read < "+quote(gate)+"; echo two; echo err2 >&2; exit 3", "alice")
	out, errs := h.readUntil(task.ID, func(out, errs string) bool { return out != "" && errs != "" })
	if out != "one\n" || errs != "err1\n" {
		t.Errorf("reads before the gate: %q, %q; want %q, %q", out, errs, "one\n", "err1\n")
	}
	if r := h.read(task.ID); r.Task.Status != bash.StatusRunning || r.Stdout.Text != "" || r.Stderr.Text != "" {
		t.Errorf("read with nothing new: %+v; want nothing, running", r)
	}
	h.release(gate)
	h.wait(l, task.ID)
	r := h.read(task.ID)
	if r.Stdout.Text != "two\n" || r.Stderr.Text != "err2\n" || r.Lossy() {
		t.Errorf("final read: %+v; want the rest, each byte once", r)
	}
	if r.Task.Status != bash.StatusCompleted || r.Task.ExitCode != 3 || r.Task.Signal != "" {
		t.Errorf("final read's task: %+v; want completed, exit code 3", r.Task)
	}
	if again := h.read(task.ID); again.Stdout.Text != "" || again.Stderr.Text != "" || again.Task != r.Task {
		t.Errorf("read after the final read: %+v; want nothing new, the same task", again)
	}
}

func (s *suite) endsWithTree(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	gate, shell := h.fifo("gate"), h.tag("shell")
	inner := "env -u " + tagName + " bash -c 'read < " + gate + "; echo late' & echo early; exit 2"
	task := h.start("exec env "+shell+" bash -c "+quote(inner), "")
	out, _ := h.readUntil(task.ID, func(out, _ string) bool { return out != "" }) // the shell ran
	h.waitGone(shell)
	if got := h.get(task.ID); got.Status != bash.StatusRunning {
		t.Errorf("after its shell exited: %+v; want running: the shell left a process", got)
	}
	h.release(gate)
	end := h.wait(l, task.ID)
	if end.Status != bash.StatusCompleted || end.ExitCode != 2 {
		t.Errorf("task ended %+v; want completed with the shell's exit code 2", end)
	}
	if out += h.read(task.ID).Stdout.Text; out != "early\nlate\n" {
		t.Errorf("reads: %q; want %q", out, "early\nlate\n")
	}
}

func (s *suite) unknownTask(t *testing.T) {
	h := s.shared(t, s.common)
	h.start("true", "")
	for _, id := range []bash.TaskID{"bash-999999", "", "nope"} {
		errs := map[string]error{}
		_, errs["Get"] = h.e.Get(bg, id)
		_, errs["OwnerOf"] = h.e.OwnerOf(h.ctx(), id)
		_, errs["ReadOutput"] = h.e.ReadOutput(h.ctx(), id)
		_, errs["Kill"] = h.e.Kill(h.ctx(), id)
		for method, err := range errs {
			var ue *bash.UnknownTaskError
			if !errors.As(err, &ue) || ue.ID != id || !errors.Is(err, bash.ErrUnknownTask) {
				t.Errorf("%s(%q): %v (%T); want a *bash.UnknownTaskError for %q", method, id, err, err, id)
			}
		}
	}
}

// failedStart: a Start whose command cannot start returns a StartError and
// leaves a failed task that listeners hear of, once.
func (s *suite) failedStart(t *testing.T) {
	h := s.harness(t, nil)
	l := h.listen()
	file := filepath.Join(h.cfg.Cwd, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want error
	}{{"missing", fs.ErrNotExist}, {file, bash.ErrNotDirectory}} {
		spec := h.resolve(bash.ExecRequest{Command: "true", Workdir: tc.dir, Owner: "alice"})
		task, err := h.e.Start(h.ctx(), spec)
		var se *bash.StartError
		var we *bash.WorkdirError
		if !errors.As(err, &se) || !errors.As(err, &we) || we.Path != spec.Workdir || !errors.Is(err, tc.want) {
			t.Fatalf("Start in %s: %v (%T); want a *bash.StartError wrapping a *bash.WorkdirError", tc.dir, err, err)
		}
		if task.ID != se.Task || task.Status != bash.StatusFailed || task.Owner != "alice" || !errors.As(task.Err, &we) {
			t.Errorf("Start in %s returned %+v; want the failed task %s with its WorkdirError", tc.dir, task, se.Task)
		}
		if end := h.wait(l, se.Task); end.Status != bash.StatusFailed || !errors.Is(end.Err, tc.want) {
			t.Errorf("listener heard %+v; want the failed task", end)
		}
		if got := h.get(se.Task); got.Status != bash.StatusFailed {
			t.Errorf("Get(%s) = %+v; want failed", se.Task, got)
		}
		r := h.read(se.Task)
		if r.Task.Status != bash.StatusFailed || r.Stdout.Text != "" || r.Stderr.Text != "" || r.Lossy() {
			t.Errorf("ReadOutput(%s) = %+v; want nothing, failed", se.Task, r)
		}
		if killed, err := h.e.Kill(h.ctx(), se.Task); killed || err != nil {
			t.Errorf("Kill(%s) = %v, %v; want false: it never ran", se.Task, killed, err)
		}
	}
	h.close()
	for _, call := range l.all() {
		if len(l.of(call.ID)) != 1 {
			t.Errorf("the listener heard of %s %d times", call.ID, len(l.of(call.ID)))
		}
	}
}
