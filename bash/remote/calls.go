package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dshgo/dsh/bash"
)

// do makes a call on the current link. A call that could not be sent on a
// link that just ended (nothing was done) is made once more on a new one.
func (e *Executor) do(ctx context.Context, method string, params any, r *reply) (*link, error) {
	for try := 0; ; try++ {
		l, err := e.current(ctx)
		if err != nil {
			return nil, err
		}
		err = l.call(ctx, method, params, r)
		var le *bash.LinkError
		if try == 0 && e.dial != nil && errors.As(err, &le) && !le.InFlight && l.lost() {
			continue
		}
		return l, err
	}
}

// Resolve asks the far side to fill the request's defaults (its default
// directory, its timeouts), after moving its directories to
// Options.Workspace.
func (e *Executor) Resolve(ctx context.Context, req bash.ExecRequest) (bash.ExecSpec, error) {
	var r reply
	l, err := e.do(ctx, methodResolve, e.mapWorkspace(req), &r)
	if err != nil {
		return bash.ExecSpec{}, err
	}
	if r.Err != nil || r.Spec == nil {
		return bash.ExecSpec{}, e.replyErr(l, r.Err)
	}
	return r.Spec.spec(), nil
}

// replyErr is the error of a reply that carries no value.
func (e *Executor) replyErr(l *link, w *wireError) error {
	if w == nil {
		return &bash.LinkError{Host: l.host, Err: errors.New("the far side's reply is empty")}
	}
	return e.localErr(l.gen, w.err(l.host))
}

// localErr renames the far side's task ids in err as the executor's own.
func (e *Executor) localErr(gen int, err error) error {
	var se *bash.StartError
	if errors.As(err, &se) {
		se.Task = e.ids.local(ref{gen, se.Task})
	}
	return err
}

// Run runs a command in the foreground on the far side, streaming its
// output to spec.OnOutput. When ctx ends, the far side stops the command
// and Run returns what it printed with an error wrapping bash.ErrAborted
// (or, if the far side does not answer within Options.AbortWait, a
// *bash.LinkError).
func (e *Executor) Run(ctx context.Context, spec bash.ExecSpec) (bash.RunResult, error) {
	if ctx.Err() != nil {
		return bash.RunResult{}, errors.Join(bash.ErrAborted, ctx.Err())
	}
	l, err := e.current(ctx)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", bash.ErrAborted, err) // nothing ran
		}
		return bash.RunResult{}, err
	}
	id := l.seq.Add(1)
	if spec.OnOutput != nil {
		lr := &liveRun{fn: spec.OnOutput}
		l.mu.Lock()
		l.runs[id] = lr
		l.mu.Unlock()
		defer func() {
			lr.stop()
			l.mu.Lock()
			delete(l.runs, id)
			l.mu.Unlock()
		}()
	}
	r, err := e.runCall(ctx, l, id, toWireSpec(spec))
	if err != nil {
		return bash.RunResult{}, err
	}
	if r.Result == nil {
		return bash.RunResult{}, e.replyErr(l, r.Err)
	}
	res := *r.Result
	res.Adopted = e.ids.local(ref{l.gen, res.Adopted})
	return res, e.localErr(l.gen, r.Err.err(l.host))
}

// runCall makes the run call; when ctx ends first it cancels it on the far
// side and waits, at most AbortWait, for the aborted run's reply.
func (e *Executor) runCall(ctx context.Context, l *link, id uint64, spec wireSpec) (reply, error) {
	var r reply
	wait, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		l.cancel(id)
		time.AfterFunc(e.opts.AbortWait, cancel)
	})
	defer stop()
	err := l.callID(wait, id, methodRun, spec, &r)
	if err != nil && wait.Err() != nil {
		return r, &bash.LinkError{Host: l.host, Err: errors.New("the far side did not stop the command in time"), InFlight: true}
	}
	return r, err
}

// Start starts a background task on the far side.
func (e *Executor) Start(ctx context.Context, spec bash.ExecSpec) (bash.Task, error) {
	var r reply
	l, err := e.do(ctx, methodStart, toWireSpec(spec), &r)
	if err != nil {
		return bash.Task{}, err
	}
	if r.Task == nil {
		return bash.Task{}, e.replyErr(l, r.Err)
	}
	t := e.task(l, *r.Task)
	return t, e.localErr(l.gen, r.Err.err(l.host))
}

// task is the far side's task under the executor's id.
func (e *Executor) task(l *link, w wireTask) bash.Task {
	t := w.task(l.host)
	t.ID = e.ids.local(ref{l.gen, w.ID})
	if t.Err != nil {
		t.Err = e.localErr(l.gen, t.Err)
	}
	return t
}

// on finds the link a task lives on: a *bash.UnknownTaskError for an id
// never given, a *bash.LinkError for a task lost with its connection.
func (e *Executor) on(ctx context.Context, id bash.TaskID) (*link, bash.TaskID, error) {
	r, ok := e.ids.remote(id)
	if !ok {
		if _, err := e.live(); errors.Is(err, bash.ErrClosed) {
			return nil, "", err
		}
		return nil, "", &bash.UnknownTaskError{ID: id}
	}
	l, err := e.current(ctx)
	if err != nil {
		var le *bash.LinkError
		if errors.As(err, &le) {
			return nil, "", &bash.LinkError{Host: le.Host, Task: id, Err: le.Err}
		}
		return nil, "", err
	}
	if l.gen != r.gen {
		return nil, "", &bash.LinkError{Host: l.host, Task: id, Err: bash.ErrLinkLost}
	}
	return l, r.id, nil
}

// taskCall calls method about task id and checks the reply's error: an
// unknown task is reported under the executor's id, and forgotten.
func (e *Executor) taskCall(ctx context.Context, method string, id bash.TaskID) (*link, reply, error) {
	return e.taskCallWith(ctx, method, id, func(rid bash.TaskID) any { return taskParams{ID: rid} })
}

// taskCallWith calls method about the task id with the params params
// makes of the far side's id for it.
func (e *Executor) taskCallWith(ctx context.Context, method string, id bash.TaskID, params func(bash.TaskID) any) (*link, reply, error) {
	l, rid, err := e.on(ctx, id)
	if err != nil {
		return nil, reply{}, err
	}
	var r reply
	if err := l.call(ctx, method, params(rid), &r); err != nil {
		var le *bash.LinkError
		if errors.As(err, &le) {
			le.Task = id
		}
		return nil, r, err
	}
	if r.Err != nil && r.Err.Kind == kindUnknownTask {
		e.ids.forget(id)
		return l, r, &bash.UnknownTaskError{ID: id}
	}
	err = e.localErr(l.gen, r.Err.err(l.host))
	var ie *bash.InputError
	if errors.As(err, &ie) {
		ie.ID = id
	}
	return l, r, err
}

// Get returns a snapshot of a task.
func (e *Executor) Get(ctx context.Context, id bash.TaskID) (bash.Task, error) {
	l, r, err := e.taskCall(ctx, methodGet, id)
	if err != nil || r.Task == nil {
		return bash.Task{}, e.orEmpty(err, l)
	}
	return e.task(l, *r.Task), nil
}

// orEmpty is err, or the error of an empty reply.
func (e *Executor) orEmpty(err error, l *link) error {
	if err != nil {
		return err
	}
	return e.replyErr(l, nil)
}

// OwnerOf returns the owner token of a task.
func (e *Executor) OwnerOf(ctx context.Context, id bash.TaskID) (string, error) {
	_, r, err := e.taskCall(ctx, methodOwnerOf, id)
	return r.Owner, err
}

// ReadOutput returns what a task printed since the previous read.
func (e *Executor) ReadOutput(ctx context.Context, id bash.TaskID) (bash.TaskRead, error) {
	l, r, err := e.taskCall(ctx, methodReadOutput, id)
	if err != nil || r.Read == nil {
		return bash.TaskRead{}, e.orEmpty(err, l)
	}
	return bash.TaskRead{Task: e.task(l, r.Read.Task), Stdout: r.Read.Stdout, Stderr: r.Read.Stderr}, nil
}

// WriteInput writes to a task's input on the far side and returns what it
// printed in response.
func (e *Executor) WriteInput(ctx context.Context, id bash.TaskID, in bash.Input) (bash.TaskRead, error) {
	l, r, err := e.taskCallWith(ctx, methodWriteInput, id, func(rid bash.TaskID) any {
		return inputParams{ID: rid, Data: in.Data, EOF: in.EOF, Wait: in.Wait, Settle: in.Settle, Quiet: in.Quiet}
	})
	if err != nil || r.Read == nil {
		return bash.TaskRead{}, e.orEmpty(err, l)
	}
	return bash.TaskRead{Task: e.task(l, r.Read.Task), Stdout: r.Read.Stdout, Stderr: r.Read.Stderr}, nil
}

// Kill stops a task and its process tree on the far side; listeners have
// heard of its end when it returns.
func (e *Executor) Kill(ctx context.Context, id bash.TaskID) (bool, error) {
	_, r, err := e.taskCall(ctx, methodKill, id)
	if err == nil {
		e.subs.flush(ctx)
	}
	return r.Killed, err
}

// List returns the tasks the far side remembers, under the executor's ids.
// Tasks lost with an earlier connection are not listed.
func (e *Executor) List(ctx context.Context) ([]bash.Task, error) {
	var r reply
	l, err := e.do(ctx, methodList, nil, &r)
	if err != nil {
		return nil, err
	}
	if r.Err != nil {
		return nil, e.replyErr(l, r.Err)
	}
	tasks := make([]bash.Task, len(r.Tasks))
	for i, w := range r.Tasks {
		tasks[i] = e.task(l, w)
	}
	return tasks, nil
}

// EndOwner tells the far side that the owner's session is over (a sandbox
// there drops its jail).
func (e *Executor) EndOwner(ctx context.Context, owner string) error {
	var r reply
	l, err := e.do(ctx, methodEndOwner, ownerParams{Owner: owner}, &r)
	if err != nil {
		return err
	}
	return r.Err.err(l.host)
}
