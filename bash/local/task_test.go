//go:build linux

package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

// doneLog collects OnTaskDone calls.
type doneLog struct {
	mu    sync.Mutex
	calls map[bash.TaskID][]bash.Task
	ch    chan bash.Task
}

func listen(e *Executor) *doneLog {
	l := &doneLog{calls: map[bash.TaskID][]bash.Task{}, ch: make(chan bash.Task, 100)}
	e.OnTaskDone(func(t bash.Task) {
		l.mu.Lock()
		l.calls[t.ID] = append(l.calls[t.ID], t)
		l.mu.Unlock()
		l.ch <- t
	})
	return l
}

func (l *doneLog) wait(t *testing.T, id bash.TaskID) bash.Task {
	t.Helper()
	for {
		select {
		case tk := <-l.ch:
			if tk.ID == id {
				return tk
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("task %s never finished", id)
		}
	}
}

func (l *doneLog) count(id bash.TaskID) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls[id])
}

func TestTaskIDsSequential(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	for i, want := range []bash.TaskID{"bash-1", "bash-2", "bash-3"} {
		tk := start(t, e, "true", "")
		if tk.ID != want || tk.Status != bash.StatusRunning || tk.Command != "true" {
			t.Errorf("task %d: %+v", i, tk)
		}
	}
	var ids []bash.TaskID
	for _, tk := range listTasks(e) {
		ids = append(ids, tk.ID)
	}
	if len(ids) != 3 || ids[0] != "bash-1" || ids[2] != "bash-3" {
		t.Errorf("List ids %v", ids)
	}
}

func TestIncrementalReads(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	l := listen(e)
	sp := newSyncPoint(t)
	tk := start(t, e, "echo one; echo err1 >&2; read < "+sp.fifo+"; echo two; echo err2 >&2; exit 3", "alice")
	out, _ := readUntil(t, e, tk.ID, "one\n")
	if out != "one\n" {
		t.Errorf("first read %q", out)
	}
	r, _ := e.ReadOutput(context.Background(), tk.ID)
	if r.Task.Status != bash.StatusRunning {
		t.Errorf("status %v", r.Task.Status)
	}
	w, _ := os.OpenFile(sp.fifo, os.O_WRONLY, 0)
	w.WriteString("\n")
	w.Close()
	done := l.wait(t, tk.ID)
	if done.Status != bash.StatusCompleted || done.ExitCode != 3 || done.Owner != "alice" {
		t.Errorf("done %+v", done)
	}
	r, err := e.ReadOutput(context.Background(), tk.ID)
	if err != nil || r.Stdout.Text != "two\n" || !strings.HasSuffix(r.Stderr.Text, "err2\n") || r.Lossy() {
		t.Errorf("read after the end %+v, %v", r, err)
	}
	r, _ = e.ReadOutput(context.Background(), tk.ID)
	if r.Stdout.Text != "" || r.Stderr.Text != "" || r.Task.Status != bash.StatusCompleted {
		t.Errorf("output delivered twice: %+v", r)
	}
}

func TestStderrSeparate(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	l := listen(e)
	tk := start(t, e, "echo out; echo bad >&2", "")
	l.wait(t, tk.ID)
	r, _ := e.ReadOutput(context.Background(), tk.ID)
	if r.Stdout.Text != "out\n" || r.Stderr.Text != "bad\n" {
		t.Errorf("read %+v", r)
	}
}

func TestLossyRead(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{MaxOutputBytes: 1000})
	l := listen(e)
	tk := start(t, e, "seq 2000; seq 100 >&2", "")
	l.wait(t, tk.ID)
	r, _ := e.ReadOutput(context.Background(), tk.ID)
	full := seqText(2000)
	if !r.Stdout.Truncated || r.Stdout.SpillPath == "" || r.Stdout.Text != full[len(full)-1000:] || !r.Lossy() {
		t.Errorf("stdout %+v", r.Stdout)
	}
	if r.Stderr.Truncated || r.Stderr.Text != seqText(100) {
		t.Errorf("stderr %+v", r.Stderr)
	}
	if got, _ := os.ReadFile(r.Stdout.SpillPath); string(got) != full {
		t.Error("spill file is not the whole stream")
	}
	if r, _ := e.ReadOutput(context.Background(), tk.ID); r.Lossy() || r.Stdout.Text != "" {
		t.Errorf("second read %+v", r)
	}
}

func TestKill(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	l := listen(e)
	pids := filepath.Join(t.TempDir(), "pids")
	sp := newSyncPoint(t)
	tk := start(t, e, "sleep 30 & echo $! > "+pids+"; echo > "+sp.fifo+"; wait", "")
	sp.reached(t)
	pid := readPids(t, pids)[0]
	killed, err := e.Kill(context.Background(), tk.ID)
	if !killed || err != nil {
		t.Fatalf("Kill = %v, %v", killed, err)
	}
	assertDead(t, pid)
	got, _ := e.Get(context.Background(), tk.ID)
	if got.Status != bash.StatusKilled || got.Signal != "SIGTERM" {
		t.Errorf("after Kill %+v", got)
	}
	if tk := l.wait(t, tk.ID); tk.Status != bash.StatusKilled {
		t.Errorf("listener saw %+v", tk)
	}
	killed, err = e.Kill(context.Background(), tk.ID)
	if killed || err != nil {
		t.Errorf("second Kill = %v, %v; want false, nil", killed, err)
	}
	fin := start(t, e, "true", "")
	l.wait(t, fin.ID)
	if killed, err := e.Kill(context.Background(), fin.ID); killed || err != nil {
		t.Errorf("Kill of a finished task = %v, %v", killed, err)
	}
	if l.count(tk.ID) != 1 || l.count(fin.ID) != 1 {
		t.Errorf("listener calls %d, %d; want 1 each", l.count(tk.ID), l.count(fin.ID))
	}
}

func TestUnknownTask(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	for name, call := range map[string]func() error{
		"Get":        func() error { _, err := e.Get(context.Background(), "bash-9"); return err },
		"OwnerOf":    func() error { _, err := e.OwnerOf(context.Background(), "bash-9"); return err },
		"ReadOutput": func() error { _, err := e.ReadOutput(context.Background(), "bash-9"); return err },
		"Kill":       func() error { _, err := e.Kill(context.Background(), "bash-9"); return err },
	} {
		err := call()
		if !errors.Is(err, bash.ErrUnknownTask) || err.Error() != `unknown bash task "bash-9"` {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestOwnerStored(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	a := start(t, e, "true", "alice")
	n := start(t, e, "true", "")
	if o, err := e.OwnerOf(context.Background(), a.ID); o != "alice" || err != nil {
		t.Errorf("OwnerOf(%s) = %q, %v", a.ID, o, err)
	}
	if o, err := e.OwnerOf(context.Background(), n.ID); o != "" || err != nil {
		t.Errorf("OwnerOf(%s) = %q, %v", n.ID, o, err)
	}
}

func TestFailedSpawnIsATask(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	l := listen(e)
	tk, err := e.Start(context.Background(), bash.ExecSpec{Command: "true", Workdir: "/nonexistent/dsh", Owner: "alice"})
	if err == nil || err.Error() != "background task bash-1 could not start: working directory /nonexistent/dsh does not exist" {
		t.Fatalf("err = %v", err)
	}
	if tk.ID != "bash-1" || tk.Status != bash.StatusFailed || tk.Err == nil {
		t.Errorf("task %+v", tk)
	}
	got := l.wait(t, "bash-1")
	if got.Status != bash.StatusFailed || l.count("bash-1") != 1 {
		t.Errorf("listener %+v, %d calls", got, l.count("bash-1"))
	}
	if r, err := e.ReadOutput(context.Background(), "bash-1"); err != nil || r.Task.Status != bash.StatusFailed || r.Stdout.Text != "" {
		t.Errorf("read %+v, %v", r, err)
	}
	if killed, err := e.Kill(context.Background(), "bash-1"); killed || err != nil {
		t.Errorf("Kill = %v, %v", killed, err)
	}
}

func TestPanickingListener(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	e.OnTaskDone(func(bash.Task) { panic("boom") })
	l := listen(e)
	tk := start(t, e, "true", "")
	if got := l.wait(t, tk.ID); got.Status != bash.StatusCompleted {
		t.Errorf("%+v", got)
	}
	tk = start(t, e, "true", "")
	l.wait(t, tk.ID) // the executor still works
}

func TestUnsubscribe(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	called := make(chan bash.Task, 10)
	unsub := e.OnTaskDone(func(tk bash.Task) { called <- tk })
	unsub()
	l := listen(e)
	tk := start(t, e, "true", "")
	l.wait(t, tk.ID)
	if len(called) != 0 {
		t.Error("an unsubscribed listener was called")
	}
}

func TestTaskLimits(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{MaxTasksPerOwner: 2, MaxTasks: 3})
	start(t, e, "sleep 30", "alice")
	start(t, e, "sleep 30", "alice")
	spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "sleep 30", Owner: "alice"})
	_, err := e.Start(context.Background(), spec)
	var le *bash.TaskLimitError
	if !errors.Is(err, bash.ErrTaskLimit) || !errors.As(err, &le) || *le != (bash.TaskLimitError{Scope: bash.PerOwner, Limit: 2}) {
		t.Errorf("per-owner limit: %v", err)
	}
	start(t, e, "sleep 30", "bob")
	spec.Owner = "carol"
	_, err = e.Start(context.Background(), spec)
	if !errors.As(err, &le) || *le != (bash.TaskLimitError{Scope: bash.PerExecutor, Limit: 3}) {
		t.Errorf("total limit: %v", err)
	}
	if n := len(listTasks(e)); n != 3 {
		t.Errorf("refused starts left tasks: %d", n)
	}
	if _, err := e.Kill(context.Background(), "bash-1"); err != nil {
		t.Fatal(err)
	}
	start(t, e, "true", "alice") // room again
}

func TestRetention(t *testing.T) {
	t.Parallel()
	spills := t.TempDir()
	e := newExec(t, &Options{MaxFinishedTasks: 2, MaxOutputBytes: 10, SpillDir: spills})
	l := listen(e)
	running := start(t, e, "sleep 30", "")
	var paths []string
	for range 4 {
		tk := start(t, e, "seq 100", "")
		l.wait(t, tk.ID)
		r, _ := e.ReadOutput(context.Background(), tk.ID)
		paths = append(paths, r.Stdout.SpillPath)
	}
	var ids []bash.TaskID
	for _, tk := range listTasks(e) {
		ids = append(ids, tk.ID)
	}
	if len(ids) != 3 || ids[0] != running.ID || ids[1] != "bash-4" || ids[2] != "bash-5" {
		t.Errorf("remembered %v; want the running task and the last two", ids)
	}
	if _, err := e.Get(context.Background(), "bash-2"); !errors.Is(err, bash.ErrUnknownTask) {
		t.Errorf("forgotten task: %v", err)
	}
	for i, p := range paths {
		_, err := os.Stat(p)
		if (i < 2) != errors.Is(err, os.ErrNotExist) {
			t.Errorf("spill %d (%s): %v", i, p, err)
		}
	}
}

// TestCloseKillsEverything: Close returns only once every process of every
// task is gone, a TERM-trapping one included, and calls no listener.
func TestCloseKillsEverything(t *testing.T) {
	t.Parallel()
	e, err := New(testOptions(&Options{Grace: 300 * time.Millisecond, SpillDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	called := make(chan bash.Task, 10)
	e.OnTaskDone(func(tk bash.Task) { called <- tk })
	dir := t.TempDir()
	var pids []int
	for i, cmd := range []string{
		"sleep 30 & echo $! > PIDS; echo > SYNC; wait",
		"trap '' TERM; sleep 31 & echo $! > PIDS; echo $$ >> PIDS; echo > SYNC; wait; wait",
		"(sleep 32 & echo $! > PIDS; echo > SYNC; wait) & wait",
	} {
		f := filepath.Join(dir, string(rune('a'+i)))
		sp := newSyncPoint(t)
		start(t, e, strings.NewReplacer("PIDS", f, "SYNC", sp.fifo).Replace(cmd), "")
		sp.reached(t)
		pids = append(pids, readPids(t, f)...)
	}
	sp := newSyncPoint(t)
	fg := make(chan error, 1)
	go func() {
		spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "echo $$ > " + filepath.Join(dir, "d") + "; echo > " + sp.fifo + "; sleep 33"})
		_, err := e.Run(context.Background(), spec)
		fg <- err
	}()
	sp.reached(t)
	pids = append(pids, readPids(t, filepath.Join(dir, "d"))...)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	assertDead(t, pids...)
	if err := <-fg; !errors.Is(err, bash.ErrClosed) {
		t.Errorf("foreground run during Close: %v", err)
	}
	if len(called) != 0 {
		t.Errorf("a listener was called during Close: %v", <-called)
	}
	spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "true"})
	if _, err := e.Run(context.Background(), spec); !errors.Is(err, bash.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	if _, err := e.Start(context.Background(), spec); !errors.Is(err, bash.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
