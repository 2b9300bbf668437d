package toolbash

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/dshgo/dsh/bash"
)

// errorText is what the model reads for an executor's error. The words come
// from the typed errors of package bash and their fields, never from their
// Error strings, so that every executor (local, sandboxed, remote) reads the
// same; an error of no known type is the executor's own infrastructure
// failure and reads as its Error string.
func errorText(err error) string {
	if err == nil {
		return "unknown error"
	}
	var (
		ce  *bash.CommandError
		te  *bash.TimeoutError
		we  *bash.WorkdirError
		wse *bash.WorkspaceError
		le  *bash.TaskLimitError
		se  *bash.StartError
		ue  *bash.UnknownTaskError
		ke  *bash.LinkError
	)
	switch {
	case errors.Is(err, bash.ErrSandboxFinal):
		return "the sandbox here lets no call run outside it (its user turned that off); it did not run. Work within the sandbox, or ask the user to run the command."
	case errors.As(err, &se):
		return fmt.Sprintf("background task %s could not start: %s", se.Task, errorText(se.Err))
	case errors.As(err, &ce):
		return commandText(ce)
	case errors.As(err, &te):
		return fmt.Sprintf("the timeout must be positive, got %v", te.Timeout)
	case errors.As(err, &we):
		return workdirText(we)
	case errors.As(err, &wse):
		return workspaceText(wse)
	case errors.As(err, &le):
		return taskLimitText(le)
	case errors.As(err, &ue):
		return fmt.Sprintf("unknown bash task %q", string(ue.ID))
	case errors.As(err, &ke):
		return linkText(ke)
	case errors.Is(err, bash.ErrClosed):
		return "the shell executor is closed: it is shutting down"
	case errors.Is(err, bash.ErrAborted):
		return "command aborted"
	}
	return err.Error()
}

func commandText(ce *bash.CommandError) string {
	if errors.Is(ce.Problem, bash.ErrNULInCommand) {
		return "invalid command: it contains a NUL byte, which bash cannot run"
	}
	if errors.Is(ce.Problem, bash.ErrEmptyCommand) {
		return "the command is empty"
	}
	return "invalid command: " + ce.Problem.Error()
}

func workdirText(we *bash.WorkdirError) string {
	switch {
	case errors.Is(we.Err, fs.ErrNotExist):
		return fmt.Sprintf("working directory %s does not exist", we.Path)
	case errors.Is(we.Err, bash.ErrNotDirectory):
		return fmt.Sprintf("working directory %s is not a directory", we.Path)
	case errors.Is(we.Err, bash.ErrOutsideSandbox):
		return fmt.Sprintf("working directory %s exists outside the sandbox, where commands cannot see it (the sandbox has a /tmp of its own and hides some paths): use a directory inside the workspace, or ask the user to open that directory as the workspace", we.Path)
	case errors.Is(we.Err, fs.ErrPermission):
		return fmt.Sprintf("working directory %s is not accessible: permission denied", we.Path)
	}
	return fmt.Sprintf("working directory %s is unusable: %v", we.Path, we.Err)
}

func workspaceText(we *bash.WorkspaceError) string {
	what := "the sandbox's own directory " + we.Holds
	if errors.Is(we.Problem, bash.ErrWorkspaceHome) {
		what = "the home directory " + we.Holds
	}
	return fmt.Sprintf("the sandbox refuses the workspace %s: commands may change their workspace, and this one would put %s within their reach. Ask the user to open a project directory as the workspace", we.Path, what)
}

func taskLimitText(le *bash.TaskLimitError) string {
	if le.Scope == bash.PerOwner {
		return fmt.Sprintf("too many background tasks are running: this session already runs %d background tasks, the most it may; stop one with bash_kill first", le.Limit)
	}
	return fmt.Sprintf("too many background tasks are running: %d background tasks are running, the most this executor allows; stop one with bash_kill first", le.Limit)
}

func linkText(ke *bash.LinkError) string {
	if errors.Is(ke.Err, bash.ErrGone) {
		return fmt.Sprintf("the shell executor on %s is gone (deleted, or its machine lost), and with it this session's background tasks and the files written there: the next call starts on a new one", ke.Host)
	}
	why := ke.Err.Error()
	if errors.Is(ke.Err, bash.ErrLinkLost) {
		why = "the connection was lost"
	}
	if ke.Task != "" {
		return fmt.Sprintf("the shell executor on %s cannot be reached (%s): the state of task %s is unknown; it may have been stopped there", ke.Host, why, ke.Task)
	}
	if ke.InFlight {
		return fmt.Sprintf("the shell executor on %s cannot be reached (%s) while the call ran: its outcome is unknown", ke.Host, why)
	}
	return fmt.Sprintf("the shell executor on %s cannot be reached (%s)", ke.Host, why)
}
