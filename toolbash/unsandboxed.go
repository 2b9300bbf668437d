package toolbash

import (
	"context"
	"errors"
	"fmt"

	"github.com/dshgo/dsh/tools"
)

// unsandboxedDescription is the bash argument's, where the front end offers
// it (Options.AskUnsandboxed).
const unsandboxedDescription = "Ask the user to run this one call outside the sandbox. Only after the sandbox refused something this call needs and the user wants done (\"Permission denied\" or \"Read-only file system\" on a path the sandbox keeps, a host service it hides): never first, never to retry after other errors. The user is asked every time and sees the command and your description as the reason."

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
)

// askUnsandboxed asks the user whether the call may run outside the
// sandbox; it returns "" for yes, else what the model reads.
func (t *Tools) askUnsandboxed(ctx context.Context, call *tools.Call, a bashArgs, workdir string) string {
	ans, err := t.askOut(ctx, Question{Call: call, Command: a.Command, Workdir: workdir, Description: a.Description, Unsandboxed: true})
	switch {
	case errors.Is(err, ErrCannotAsk):
		return unsandboxedCannotAsk
	case ctx.Err() != nil:
		return "command aborted"
	case err != nil:
		return fmt.Sprintf("this command asks to run outside the sandbox, and the user could not be asked (%v); it did not run", err)
	case ans != AllowOnce:
		return UnsandboxedDeclinedText // an "always" is no answer to this question
	}
	return ""
}
