package local

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/dshgo/dsh/bash"
)

// task is a background (or adopted, or failed) task.
type task struct {
	id      bash.TaskID
	spec    bash.ExecSpec
	p       *proc         // nil when the spawn failed
	ready   chan struct{} // closed once p is set (or the spawn failed)
	ended   chan struct{} // closed once the final status is recorded
	started time.Time

	// guarded by Executor.mu
	status       bash.TaskStatus
	exitCode     int
	signal       string
	limit        string
	err          error
	refusalsRead bool // a read has returned the ended task's refusals
}

func (t *task) snapshot() bash.Task {
	return bash.Task{ID: t.id, Command: t.spec.Command, Status: t.status, ExitCode: t.exitCode,
		Signal: t.signal, Limit: t.limit, Owner: t.spec.Owner, Err: t.err, Input: t.spec.Input, Started: t.started, Terminal: t.spec.Terminal != nil}
}

// reserve checks the limits and registers a running task with no proc yet.
func (e *Executor) reserve(spec bash.ExecSpec) (*task, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, bash.ErrClosed
	}
	if e.running[spec.Owner] >= e.perOwner {
		return nil, &bash.TaskLimitError{Scope: bash.PerOwner, Limit: e.perOwner}
	}
	if e.runningAll >= e.all {
		return nil, &bash.TaskLimitError{Scope: bash.PerExecutor, Limit: e.all}
	}
	e.seq++
	t := &task{id: bash.TaskID("bash-" + strconv.Itoa(e.seq)), spec: spec, status: bash.StatusRunning, started: time.Now(),
		ready: make(chan struct{}), ended: make(chan struct{})}
	e.tasks[t.id] = t
	e.order = append(e.order, t)
	e.running[spec.Owner]++
	e.runningAll++
	e.wg.Add(1) // the finisher, started by launched or failed
	return t, nil
}

// launched attaches a running proc to its task and starts its finisher.
func (e *Executor) launched(t *task, p *proc) {
	t.p = p
	close(t.ready)
	if t.spec.Input && p.probes() {
		e.wg.Add(1)
		go e.watchWaiting(t)
	}
	go func() {
		defer e.wg.Done()
		<-p.done
		code, sig := exitStatus(p)
		status := bash.StatusCompleted
		if p.stopping() || sig != "" {
			status = bash.StatusKilled
		}
		e.mu.Lock()
		t.limit = p.status.Limit
		e.mu.Unlock()
		e.finish(t, status, code, sig, nil)
		e.track(p, false)
	}()
}

// failed records a task whose command could not start.
func (e *Executor) failed(t *task, err error) {
	close(t.ready)
	e.finish(t, bash.StatusFailed, -1, "", err)
	e.wg.Done()
}

// finish records a task's end, forgets the oldest ended tasks past the
// limit, and calls the listeners.
func (e *Executor) finish(t *task, status bash.TaskStatus, code int, sig string, failure error) {
	e.mu.Lock()
	t.status, t.exitCode, t.signal, t.err = status, code, sig, failure
	e.running[t.spec.Owner]--
	if e.running[t.spec.Owner] == 0 {
		delete(e.running, t.spec.Owner)
	}
	e.runningAll--
	e.finished++
	var forget []*task
	for i := 0; e.finished > e.maxFinished && i < len(e.order); {
		old := e.order[i]
		if old.status == bash.StatusRunning {
			i++
			continue
		}
		e.order = slices.Delete(e.order, i, i+1)
		delete(e.tasks, old.id)
		e.finished--
		forget = append(forget, old)
	}
	var call []func(bash.Task)
	if !e.closed {
		for _, id := range slices.Sorted(maps.Keys(e.listeners)) {
			call = append(call, e.listeners[id])
		}
	}
	snap := t.snapshot()
	e.mu.Unlock()
	for _, old := range forget {
		if old.p != nil {
			old.p.out.release()
			old.p.errs.release()
		}
	}
	for _, fn := range call {
		callListener(fn, snap)
	}
	// Only now: a Kill that returns has let every listener hear of the end.
	close(t.ended)
}

func callListener(fn func(bash.Task), t bash.Task) {
	defer func() { _ = recover() }() // a listener's panic is its own; the others still run
	fn(t)
}

// Start runs spec in the background. See bash.Executor. When the command
// cannot start, the error comes with the failed task, which listeners hear of.
func (e *Executor) Start(ctx context.Context, spec bash.ExecSpec) (bash.Task, error) {
	spec.Input = spec.Input || spec.Terminal != nil
	t, err := e.reserve(spec)
	if err != nil {
		return bash.Task{}, err
	}
	p, err := e.start(ctx, spec, 0)
	if err != nil {
		err = abortedStart(ctx, err)
		e.failed(t, err)
		return e.status(t), &bash.StartError{Task: t.id, Err: err}
	}
	e.launched(t, p)
	return e.status(t), nil // just started: not read for input yet
}

// status is the task's snapshot, as recorded: WaitingInput unread.
func (e *Executor) status(t *task) bash.Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	return t.snapshot()
}

// snap is the task's snapshot, WaitingInput read from the kernel.
func (e *Executor) snap(t *task) bash.Task { return withWaiting(t, e.status(t)) }

// withWaiting sets snap.WaitingInput by reading the kernel's state of a
// running task's processes, outside the executor's lock.
func withWaiting(t *task, snap bash.Task) bash.Task {
	if snap.Status == bash.StatusRunning && snap.Input && isClosed(t.ready) && t.p != nil {
		snap.WaitingInput = t.p.waitingNow()
	}
	return snap
}

func (e *Executor) lookup(id bash.TaskID) (*task, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tasks[id]
	if !ok {
		return nil, &bash.UnknownTaskError{ID: id}
	}
	return t, nil
}

// Get returns a snapshot of the task.
func (e *Executor) Get(_ context.Context, id bash.TaskID) (bash.Task, error) {
	t, err := e.lookup(id)
	if err != nil {
		return bash.Task{}, err
	}
	return e.snap(t), nil
}

// List returns every remembered task, oldest first.
func (e *Executor) List(context.Context) ([]bash.Task, error) {
	e.mu.Lock()
	order := slices.Clone(e.order)
	out := make([]bash.Task, len(order))
	for i, t := range order {
		out[i] = t.snapshot()
	}
	e.mu.Unlock()
	for i, t := range order {
		out[i] = withWaiting(t, out[i])
	}
	return out, nil
}

// OwnerOf returns the owner token stored on the task at spawn.
func (e *Executor) OwnerOf(_ context.Context, id bash.TaskID) (string, error) {
	t, err := e.lookup(id)
	if err != nil {
		return "", err
	}
	return t.spec.Owner, nil
}

// started looks the task up and waits until its start is over (its proc
// is set, or its spawn failed).
func (e *Executor) started(ctx context.Context, id bash.TaskID) (*task, error) {
	t, err := e.lookup(id)
	if err != nil {
		return nil, err
	}
	select {
	case <-t.ready:
		return t, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// ReadOutput returns what the task printed since the previous read.
func (e *Executor) ReadOutput(ctx context.Context, id bash.TaskID) (bash.TaskRead, error) {
	t, err := e.started(ctx, id)
	if err != nil {
		return bash.TaskRead{}, err
	}
	return e.read(t, false), nil
}

// read reads the task's new output. With waiting, the caller has just
// seen the task wait for input (WriteInput's answer), and a running task
// is said to without another reading of its state.
func (e *Executor) read(t *task, waiting bool) bash.TaskRead {
	// The status is taken first: if it says ended, the streams are complete.
	var r bash.TaskRead
	if waiting {
		r.Task = e.status(t)
		r.Task.WaitingInput = r.Task.Status == bash.StatusRunning
	} else {
		r.Task = e.snap(t)
	}
	if t.p != nil {
		r.Stdout, r.Stderr = t.p.out.next(), t.p.errs.next()
		if r.Task.WaitingInput {
			t.p.news.show()
		}
		if r.Task.Done() {
			r.Refused, r.RefusedMore = e.takeRefusals(t)
		}
	}
	return r
}

// takeRefusals hands out an ended task's refused execs, to one read.
func (e *Executor) takeRefusals(t *task) ([]bash.Refusal, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.refusalsRead {
		return nil, 0
	}
	t.refusalsRead = true
	return t.p.status.Refused, t.p.status.RefusedMore
}

// Kill stops the task and its whole process tree and waits until it has
// ended, and the listeners have been told, or ctx is done. It returns false
// when the task had already ended.
func (e *Executor) Kill(ctx context.Context, id bash.TaskID) (bool, error) {
	t, err := e.lookup(id)
	if err != nil {
		return false, err
	}
	<-t.ready
	if t.p == nil {
		return false, nil
	}
	select {
	case <-t.p.done:
		return false, nil
	default:
	}
	t.p.stop()
	select {
	case <-t.ended:
		return true, nil
	case <-ctx.Done():
		return true, fmt.Errorf("task %s is still being stopped: %w", id, context.Cause(ctx))
	}
}
