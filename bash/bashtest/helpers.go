//go:build linux

package bashtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
)

var bg = context.Background()

// ctx is the context of one call to the executor: done after waitLimit, so
// that a call that never returns fails its test, the call's error naming
// the deadline, instead of hanging it until go test's timeout.
func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(h.t.Context(), waitLimit)
	h.t.Cleanup(cancel)
	return ctx
}

// resolve resolves req, failing the test on an error.
func (h *harness) resolve(req bash.ExecRequest) bash.ExecSpec {
	h.t.Helper()
	spec, err := h.e.Resolve(bg, req)
	if err != nil {
		h.t.Fatalf("Resolve(%q): %v", req.Command, err)
	}
	return spec
}

// run runs req in the foreground, failing the test on an error.
func (h *harness) run(req bash.ExecRequest) bash.RunResult {
	h.t.Helper()
	res, err := h.e.Run(h.ctx(), h.resolve(req))
	if err != nil {
		h.t.Fatalf("Run(%q): %v", req.Command, err)
	}
	return res
}

// runCmd runs cmd in the foreground with every default.
func (h *harness) runCmd(cmd string) bash.RunResult {
	h.t.Helper()
	return h.run(bash.ExecRequest{Command: cmd})
}

// start starts cmd in the background for owner, failing the test on an
// error.
func (h *harness) start(cmd, owner string) bash.Task {
	h.t.Helper()
	task, err := h.e.Start(h.ctx(), h.resolve(bash.ExecRequest{Command: cmd, Owner: owner}))
	if err != nil {
		h.t.Fatalf("Start(%q): %v", cmd, err)
	}
	return task
}

// get returns a snapshot of the task, failing the test on an error.
func (h *harness) get(id bash.TaskID) bash.Task {
	h.t.Helper()
	task, err := h.e.Get(bg, id)
	if err != nil {
		h.t.Fatalf("Get(%s): %v", id, err)
	}
	return task
}

// list lists the tasks, failing the test on an error.
func (h *harness) list() []bash.Task {
	h.t.Helper()
	list, err := h.e.List(bg)
	if err != nil {
		h.t.Fatalf("List: %v", err)
	}
	return list
}

// read reads the task's new output, failing the test on an error, and
// checks that its text is valid UTF-8.
func (h *harness) read(id bash.TaskID) bash.TaskRead {
	h.t.Helper()
	r, err := h.e.ReadOutput(h.ctx(), id)
	if err != nil {
		h.t.Fatalf("ReadOutput(%s): %v", id, err)
	}
	for _, o := range []bash.Output{r.Stdout, r.Stderr} {
		if !utf8.ValidString(o.Text) {
			h.t.Errorf("ReadOutput(%s): text %q is not valid UTF-8", id, o.Text)
		}
	}
	return r
}

// readUntil reads the task, polling, until what its reads returned in all
// satisfies ok, and returns that.
func (h *harness) readUntil(id bash.TaskID, ok func(stdout, stderr string) bool) (stdout, stderr string) {
	h.t.Helper()
	done := h.eventually(func() bool {
		r := h.read(id)
		stdout += r.Stdout.Text
		stderr += r.Stderr.Text
		return ok(stdout, stderr)
	})
	if !done {
		h.t.Fatalf("task %s: reads never got there; got stdout %q, stderr %q", id, stdout, stderr)
	}
	return stdout, stderr
}

// eventually polls cond until it holds or waitLimit passes, and reports
// whether it held. It is for conditions no event announces: new output of a
// task (the seam pushes none), a process appearing or stopping in /proc.
func (h *harness) eventually(cond func() bool) bool {
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// spillSum is the SHA-256 of a spill file, read by the executor's own bash
// (a spill path is as the executor's commands see it).
func (h *harness) spillSum(path string) string {
	h.t.Helper()
	if path == "" {
		h.t.Fatal("no spill path")
	}
	res := h.runCmd("sha256sum < " + quote(path))
	sum, _, _ := strings.Cut(res.Stdout.Text, " ")
	if res.ExitCode != 0 || len(sum) != 64 {
		h.t.Fatalf("sha256sum of the spill file %s: exit %d, %q %q", path, res.ExitCode, res.Stdout.Text, res.Stderr.Text)
	}
	return sum
}

// checkSpill checks that the spill file holds exactly want.
func (h *harness) checkSpill(what, path, want string) {
	h.t.Helper()
	if path == "" {
		h.t.Errorf("%s: no spill file", what)
		return
	}
	sum := sha256.Sum256([]byte(want))
	if got := h.spillSum(path); got != hex.EncodeToString(sum[:]) {
		h.t.Errorf("%s: the spill file %s does not hold the %d bytes printed", what, path, len(want))
	}
}

// doneLog records a listener's calls (OnTaskDone).
type doneLog struct {
	mu    sync.Mutex
	calls []bash.Task
	ch    chan bash.Task
}

func newDoneLog() *doneLog { return &doneLog{ch: make(chan bash.Task, 1000)} }

// listen registers a recording listener; on an executor shared with
// other tests, it is unsubscribed when the test ends.
func (h *harness) listen() *doneLog {
	l := newDoneLog()
	unsubscribe := h.e.OnTaskDone(l.record)
	if h.shared {
		h.t.Cleanup(unsubscribe)
	}
	return l
}

func (l *doneLog) record(t bash.Task) {
	l.mu.Lock()
	l.calls = append(l.calls, t)
	l.mu.Unlock()
	l.ch <- t
}

// of returns the calls for the task.
func (l *doneLog) of(id bash.TaskID) []bash.Task {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []bash.Task
	for _, t := range l.calls {
		if t.ID == id {
			out = append(out, t)
		}
	}
	return out
}

// all returns every call so far.
func (l *doneLog) all() []bash.Task {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bash.Task(nil), l.calls...)
}

// wait waits until the listener has heard of the task's end.
func (h *harness) wait(l *doneLog, id bash.TaskID) bash.Task {
	h.t.Helper()
	deadline := time.After(waitLimit)
	for {
		if calls := l.of(id); len(calls) > 0 {
			return calls[0]
		}
		select {
		case t := <-l.ch:
			if t.ID != id && h.e.stranger(t.ID) {
				h.t.Fatalf("waiting for the end of task %s, the listener heard of the end of %s, an id no Start or Run returned", id, t.ID)
			}
		case <-deadline:
			h.t.Fatalf("the listener never heard of the end of task %s", id)
		}
	}
}

// lines is the output of `seq from to`.
func lines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintln(&b, i)
	}
	return b.String()
}

// atOnce fails the test when more than the bound on "at once" has passed
// since start.
func (h *harness) atOnce(what string, start time.Time) {
	h.t.Helper()
	if d := time.Since(start); d > atOnceBound {
		h.t.Errorf("%s took %v; it must return at once", what, d.Round(time.Millisecond))
	}
}
