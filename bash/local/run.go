package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dshgo/dsh/bash"
)

// Run runs spec in the foreground. See bash.Executor.
func (e *Executor) Run(ctx context.Context, spec bash.ExecSpec) (bash.RunResult, error) {
	if err := ctx.Err(); err != nil {
		return bash.RunResult{}, fmt.Errorf("%w before it started: %w", bash.ErrAborted, err)
	}
	if spec.Timeout <= 0 {
		return bash.RunResult{}, errors.New("the spec has no timeout: resolve the request first")
	}
	if spec.Input || spec.Terminal != nil {
		return bash.RunResult{}, errors.New("the spec asks for input, which only Start gives")
	}
	p, err := e.start(ctx, spec, e.drain)
	if err != nil {
		return bash.RunResult{}, abortedStart(ctx, err)
	}
	res := bash.RunResult{Timeout: spec.Timeout}
	timer := time.NewTimer(spec.Timeout)
	defer timer.Stop()
	timerC, ctxDone, closing, lingering := timer.C, ctx.Done(), e.closing, p.lingering
wait:
	for {
		select {
		case <-p.done:
			break wait
		case <-lingering:
			// The shell exited a drain delay ago and processes remain.
			lingering = nil
			if !p.stopping() {
				p.mute() // what comes now belongs to the adopted task
				e.adopt(p, spec, &res)
				break wait
			}
		case <-timerC:
			timerC = nil
			if !isClosed(p.shellDone) { // an exited command is not timed out
				res.TimedOut = true
				p.stop()
			}
		case <-ctxDone:
			ctxDone = nil
			res.Aborted = true
			p.stop()
		case <-closing:
			closing = nil
			p.stop()
		}
	}
	p.mute()
	if res.Adopted == "" {
		res.Stdout, res.Stderr = p.out.tail(false), p.errs.tail(false)
		e.track(p, false)
	}
	res.ExitCode, res.Signal = exitStatus(p)
	res.Limit, res.Note = p.status.Limit, p.status.Note
	res.Refused, res.RefusedMore = p.status.Refused, p.status.RefusedMore
	switch {
	case res.Aborted:
		return res, fmt.Errorf("%w: %w", bash.ErrAborted, context.Cause(ctx))
	case p.stopping() && !res.TimedOut && !res.LeftoversKilled:
		return res, fmt.Errorf("the command was stopped: %w", bash.ErrClosed)
	}
	return res, nil
}

// abortedStart is err, the failure of a command's start, or an abort when
// ctx ended meanwhile: a spawner that gave up with ctx (a jail whose start
// was cut short) says nothing the caller did not cause, and the call
// reads as any other aborted call does.
func abortedStart(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w before it started: %w", bash.ErrAborted, context.Cause(ctx))
}

// adopt turns the processes a foreground command left behind into a
// background task of the same owner, or kills them when the owner is at its
// task limit.
// An Unsandboxed run's leftovers are always killed: the user's yes to
// run that one command outside the sandbox does not cover processes that
// would run on there after it (a loop that runs what a later, sandboxed
// command writes to a file).
func (e *Executor) adopt(p *proc, spec bash.ExecSpec, res *bash.RunResult) {
	var t *task
	err := errors.New("outside the sandbox")
	if !spec.Unsandboxed {
		t, err = e.reserve(spec)
	}
	if err != nil {
		res.LeftoversKilled, res.LeftoversOutside = true, spec.Unsandboxed
		p.stop()
		<-p.done
		return
	}
	// The result takes what was printed so far; the task's reads go on from
	// there.
	res.Stdout, res.Stderr = p.out.tail(true), p.errs.tail(true)
	res.Adopted = t.id
	e.launched(t, p)
}

// exitStatus reads the shell's exit code and signal.
func exitStatus(p *proc) (int, string) {
	return p.status.Code, signalName(p.status.Signal)
}
