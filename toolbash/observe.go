package toolbash

import (
	"context"
	"errors"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/tools"
)

// What the tools tell the operators (package observe): each call's event,
// which the front end carries in the call's context (observe.WithCall),
// gets the bash call's command and how it ended, the task a call started
// or named, the permission gate's verdict and the user's answers; and the
// end of every background task is an event of its own (Options.Observe).
// Nothing of a command's output goes into an event.

// noteBash notes a bash call's arguments in its event.
func noteBash(ctx context.Context, a bashArgs) {
	if c := observe.CallFrom(ctx); c != nil {
		c.Command, c.Description = a.Command, a.Description
	}
}

// aborted is the result of a call whose context ended the command.
func aborted(ctx context.Context) *tools.Result {
	observe.CallFrom(ctx).Fail(observe.OutcomeAborted, abortedText)
	return tools.ErrorResult(abortedText)
}

// abortedText is what the model reads of a call aborted.
const abortedText = "command aborted"

// noteStart notes the background task a bash call started.
func noteStart(ctx context.Context, id bash.TaskID) {
	if c := observe.CallFrom(ctx); c != nil {
		c.Task, c.Outcome = string(id), observe.OutcomeOK
	}
}

// noteTask notes the task a call named.
func noteTask(ctx context.Context, id bash.TaskID) {
	if c := observe.CallFrom(ctx); c != nil {
		c.Task = string(id)
	}
}

// noteRun notes how a foreground run ended: its status, the sizes of its
// streams, the spill files kept of them, the limit that ended it, the
// programs refused, and the task that adopted what it left running.
func noteRun(ctx context.Context, res bash.RunResult) {
	c := observe.CallFrom(ctx)
	if c == nil {
		return
	}
	c.Outcome, c.ExitCode, c.Signal, c.Limit = runOutcome(res), res.ExitCode, res.Signal, res.Limit
	c.StdoutBytes, c.StderrBytes = streamBytes(res.Stdout), streamBytes(res.Stderr)
	for _, o := range []bash.Output{res.Stdout, res.Stderr} {
		if o.SpillPath != "" {
			c.Spills = append(c.Spills, o.SpillPath)
			c.SpilledBytes += streamBytes(o)
		}
	}
	c.Refused, c.RefusedMore = refusals(res.Refused), res.RefusedMore
	if res.Adopted != "" {
		c.Task = string(res.Adopted)
	}
}

// streamBytes is the size of a stream: what the executor counted, else
// (one that does not count) at least the text it returned.
func streamBytes(o bash.Output) int64 { return max(o.Bytes, int64(len(o.Text))) }

// runOutcome is a foreground run's outcome: what ended it, the most
// telling first (a limit's kill is a signal too; a timeout's as well).
func runOutcome(res bash.RunResult) string {
	switch {
	case res.Aborted:
		return observe.OutcomeAborted
	case res.Limit != "":
		return observe.OutcomeLimit
	case res.TimedOut:
		return observe.OutcomeTimeout
	case res.Signal != "":
		return observe.OutcomeSignal
	case res.ExitCode != 0:
		return observe.OutcomeExit
	}
	return observe.OutcomeOK
}

// taskOutcome is an ended task's outcome.
func taskOutcome(task bash.Task) string {
	switch {
	case task.Status == bash.StatusFailed:
		return observe.OutcomeError
	case task.Limit != "":
		return observe.OutcomeLimit
	case task.Signal != "":
		return observe.OutcomeSignal
	case task.ExitCode != 0:
		return observe.OutcomeExit
	}
	return observe.OutcomeOK
}

func refusals(rs []bash.Refusal) []observe.Refusal {
	var out []observe.Refusal
	for _, r := range rs {
		out = append(out, observe.Refusal{Program: r.Program, Argv: r.Argv, Rule: r.Rule})
	}
	return out
}

// taskEnded tells the operators of a background task's end; the
// executor tells once per task. A task that failed to start was its
// call's error, and is no task of anyone's.
func (t *Tools) taskEnded(task bash.Task) {
	if t.observe == nil || task.Status == bash.StatusFailed {
		return
	}
	now := time.Now()
	e := &observe.TaskEnd{Time: now, Session: observe.SessionName(task.Owner), Task: string(task.ID),
		Outcome: taskOutcome(task), ExitCode: task.ExitCode, Signal: task.Signal, Limit: task.Limit}
	if !task.Started.IsZero() {
		e.Duration = max(now.Sub(task.Started), 0)
	}
	t.observe(e)
}

// notePermission notes the rules' verdict on a call.
func notePermission(ctx context.Context, v permission.Verdict) *observe.Permission {
	c := observe.CallFrom(ctx)
	if c == nil {
		return nil
	}
	p := &observe.Permission{Verdict: v.Decision.String(), Reason: v.Reason}
	if v.Rule != nil {
		p.Rule, p.Source = v.Rule.Pattern, v.Rule.Source
	}
	c.Permission = p
	return p
}

// The user's answers to a question, as events say them.
const (
	answerOnce      = "allowed once"
	answerSession   = "allowed for the session"
	answerAllowed   = "allowed"
	answerDenied    = "denied"
	answerNone      = "unanswered"
	answerCannotAsk = "cannot ask"
)

// noteAnswer notes the user's answer to the gate's question (p nil: the
// call is not observed).
func noteAnswer(p *observe.Permission, answer string) {
	if p != nil {
		p.Answer = answer
	}
}

// unanswered is the answer, as events say it, of a question whose asker
// failed with err (ErrCannotAsk: nobody could be asked), or whose call
// was aborted.
func unanswered(ctx context.Context, err error) string {
	if errors.Is(err, ErrCannotAsk) && ctx.Err() == nil {
		return answerCannotAsk
	}
	return answerNone
}

// denied is the error result of a call that did not run because the
// rules or the user (or nobody's answer) refused it; aborted if its
// context ended.
func denied(ctx context.Context, text string) *tools.Result {
	outcome := observe.OutcomeDenied
	if ctx.Err() != nil {
		outcome = observe.OutcomeAborted
	}
	observe.CallFrom(ctx).Fail(outcome, text)
	return tools.ErrorResult(text)
}

// noteUnsandboxed notes the question to run a call outside the sandbox
// (asked: it was put to the user), and its answer.
func noteUnsandboxed(ctx context.Context, asked bool, answer string) {
	if c := observe.CallFrom(ctx); c != nil {
		c.Unsandboxed = &observe.Question{Asked: asked, Answer: answer}
	}
}
