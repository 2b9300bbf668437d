package toolbash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dshgo/dsh/tools"
)

// unsandboxedDescription is the bash argument's, where the front end offers
// it (Options.AskUnsandboxed).
const unsandboxedDescription = "Ask the user to run this one call outside the sandbox. Only after the sandbox refused something this call needs and the user wants done (\"Permission denied\" or \"Read-only file system\" on a path the sandbox keeps, a host service it hides): never first, never to retry after other errors. The user is asked every time and sees the command and your description as the reason. Not with input or tty: a yes covers the command, not what is written to it later."

// describeUnsandboxed is the argument's description: what it is for, and
// what the sandbox (where known) already allows.
func describeUnsandboxed(sandbox *SandboxFacts) string {
	if sandbox == nil {
		return unsandboxedDescription
	}
	return unsandboxedDescription + " " + sandbox.allows()
}

// Texts the model reads when a call asked to run outside the sandbox and
// did not.
const (
	UnsandboxedDeclinedText = "the user declined to run this command outside the sandbox; it did not run. Work within the sandbox, or ask the user how to proceed."
	unsandboxedCannotAsk    = "this command asks to run outside the sandbox, which needs the user's yes each time, and this client cannot ask the user; it did not run. Work within the sandbox, or ask the user to run it."
	unsandboxedNoAnswer     = "this command asks to run outside the sandbox, and nobody answered the question (the client dismissed it without the user's answer); it did not run. Work within the sandbox, or ask the user to run it, or to answer the question when you ask again."
	// unsandboxedInteractive: a run outside the sandbox is one command,
	// not a program that runs what it is given later.
	unsandboxedInteractive = "invalid arguments: unsandboxed cannot go with input or tty: the user's yes covers the command, not what would be written to it later. Nothing ran. Run the program in the sandbox, or ask the user to run it."
	// unsandboxedOff and unsandboxedNoSandbox are what a call that sets
	// an argument this server does not offer reads.
	unsandboxedOff       = "invalid arguments: unsandboxed is turned off on this server (the user chose never to be asked to run a command outside the sandbox); nothing ran. Work within the sandbox, or ask the user to run the command."
	unsandboxedNoSandbox = "invalid arguments: unsandboxed does not apply here: commands on this server do not run in a sandbox. Call again without it."
)

// withheld is what a bash call reads when it sets unsandboxed where the
// argument is not offered.
func (t *Tools) withheld() map[string]string {
	switch {
	case t.askOut != nil:
		return nil
	case t.sandbox:
		return map[string]string{"unsandboxed": unsandboxedOff}
	}
	return map[string]string{"unsandboxed": unsandboxedNoSandbox}
}

// validateBash refuses arguments that exclude each other, before anyone
// is asked about the call.
func validateBash(args json.RawMessage) error {
	var a bashArgs
	if json.Unmarshal(args, &a) == nil && a.Unsandboxed && (a.Input || a.TTY) {
		return errors.New(unsandboxedInteractive)
	}
	return nil
}

// askUnsandboxed asks the user whether the call may run outside the
// sandbox; it returns nil for yes, else the call's result (with the
// asker's error, if any).
func (t *Tools) askUnsandboxed(ctx context.Context, call *tools.Call, a bashArgs, workdir string) *tools.Result {
	ans, err := t.askOut(ctx, Question{Call: call, Command: a.Command, Workdir: workdir, Description: a.Description,
		Unsandboxed: true, Background: a.Background})
	switch {
	case err != nil || ctx.Err() != nil:
		answer := unanswered(ctx, err)
		noteUnsandboxed(ctx, answer != answerCannotAsk, answer)
		res := denied(ctx, unsandboxedUnansweredText(ctx, err))
		res.Err = err
		return res
	case ans != AllowOnce:
		noteUnsandboxed(ctx, true, answerDenied)
		return denied(ctx, UnsandboxedDeclinedText) // an "always" is no answer to this question
	}
	noteUnsandboxed(ctx, true, answerAllowed)
	return nil
}

// unsandboxedUnansweredText is what the model reads of a call whose
// question to run outside the sandbox got no answer: the asker failed
// with err, or the call was aborted.
func unsandboxedUnansweredText(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, ErrCannotAsk):
		return unsandboxedCannotAsk
	case errors.Is(err, ErrNoAnswer):
		return unsandboxedNoAnswer
	case ctx.Err() != nil:
		return "command aborted"
	}
	return fmt.Sprintf("this command asks to run outside the sandbox, and the user could not be asked (%v); it did not run", err)
}
