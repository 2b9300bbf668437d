package bash

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Errors an executor returns; match them with errors.Is. The words the model
// reads are chosen by the tool layer from these errors and their fields, not
// taken from their Error strings, so that every executor reads the same.
var (
	// ErrUnknownTask: no task has that id (or it was forgotten).
	ErrUnknownTask = errors.New("unknown bash task")
	// ErrAborted: the caller's context ended a foreground run.
	ErrAborted = errors.New("command aborted")
	// ErrClosed: the executor is closed.
	ErrClosed = errors.New("bash executor is closed")
	// ErrTaskLimit: too many tasks are running; a [*TaskLimitError] says
	// which limit.
	ErrTaskLimit = errors.New("too many background tasks are running")
	// ErrNULInCommand: the command holds a NUL byte, which no bash string
	// can; a [*CommandError] says where.
	ErrNULInCommand = errors.New("the command contains a NUL byte")
	// ErrEmptyCommand: the command is empty or only white space.
	ErrEmptyCommand = errors.New("the command is empty")
	// ErrNotDirectory: a working directory names something that is not a
	// directory (see [WorkdirError]).
	ErrNotDirectory = errors.New("not a directory")
	// ErrOutsideSandbox: a working directory exists on the host but not
	// in the sandbox's view of it (its /tmp is the session's own; hidden
	// paths are empty) (see [WorkdirError]).
	ErrOutsideSandbox = errors.New("outside the sandbox's view")
	// ErrSandboxFinal: a spec asked to run outside a sandbox that lets no
	// call out (ExecSpec.Unsandboxed where its executor refuses it).
	ErrSandboxFinal = errors.New("this sandbox lets no call run outside it")
	// ErrWorkspaceHome: a workspace that is the home directory or holds it
	// (the root directory does), which commands must not be able to change
	// (see [WorkspaceError]).
	ErrWorkspaceHome = errors.New("the workspace is or holds the home directory")
	// ErrWorkspaceServer: a workspace that holds, or lies in, a directory
	// the executor keeps for itself (its sessions' private files).
	ErrWorkspaceServer = errors.New("the workspace holds or lies in the executor's own directories")
)

// WorkspaceError says that an executor refuses a session's workspace, which
// its commands could change: a sandbox makes the workspace writable, so it
// refuses one that would put the home directory or the executor's own
// files within their reach. No process was started.
type WorkspaceError struct {
	// Path is the workspace.
	Path string
	// Holds is what it must not reach: the home directory, or the
	// executor's directory it holds or lies in.
	Holds string
	// Problem is ErrWorkspaceHome or ErrWorkspaceServer.
	Problem error
}

func (e *WorkspaceError) Error() string {
	return fmt.Sprintf("workspace %s refused: %v (%s)", e.Path, e.Problem, e.Holds)
}

// Unwrap returns Problem.
func (e *WorkspaceError) Unwrap() error { return e.Problem }

// CommandError says why a command cannot be run at all; no process was
// started for it. errors.Is matches it with its Problem.
type CommandError struct {
	// Problem names the kind of problem: ErrNULInCommand, ErrEmptyCommand.
	Problem error
	// Offset is the byte offset in the command where the problem is.
	Offset int
}

func (e *CommandError) Error() string {
	if e.Problem == ErrEmptyCommand {
		return e.Problem.Error()
	}
	return fmt.Sprintf("%v (at byte %d)", e.Problem, e.Offset)
}

// Unwrap returns Problem, for errors.Is.
func (e *CommandError) Unwrap() error { return e.Problem }

// TimeoutError is a requested timeout that cannot apply (a negative one).
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the timeout must be positive, got %v", e.Timeout)
}

// WorkdirError says that a command's working directory cannot be used; no
// process was started. Like os.PathError, it wraps why.
type WorkdirError struct {
	// Path is the working directory, as the executor's commands see it.
	Path string
	// Err is why: fs.ErrNotExist, ErrNotDirectory, ErrOutsideSandbox, or
	// the system's error.
	Err error
}

func (e *WorkdirError) Error() string {
	switch {
	case errors.Is(e.Err, fs.ErrNotExist):
		return fmt.Sprintf("working directory %s does not exist", e.Path)
	case errors.Is(e.Err, ErrNotDirectory):
		return fmt.Sprintf("working directory %s is not a directory", e.Path)
	case errors.Is(e.Err, ErrOutsideSandbox):
		return fmt.Sprintf("working directory %s is outside the sandbox's view", e.Path)
	}
	return fmt.Sprintf("working directory %s is unusable: %v", e.Path, e.Err)
}

// Unwrap returns Err.
func (e *WorkdirError) Unwrap() error { return e.Err }

// LimitScope says whose tasks a limit counts.
type LimitScope int

// The scopes of a task limit.
const (
	// PerOwner counts the tasks of one owner token (one session).
	PerOwner LimitScope = iota
	// PerExecutor counts every task of the executor.
	PerExecutor
)

// TaskLimitError says that a task could not start (or leftovers could not
// be adopted) because Limit tasks are already running in Scope. It matches
// ErrTaskLimit.
type TaskLimitError struct {
	Scope LimitScope
	Limit int
}

func (e *TaskLimitError) Error() string {
	if e.Scope == PerOwner {
		return fmt.Sprintf("%v: the owner already runs %d, the most it may", ErrTaskLimit, e.Limit)
	}
	return fmt.Sprintf("%v: %d are running, the most the executor allows", ErrTaskLimit, e.Limit)
}

// Is makes errors.Is(err, ErrTaskLimit) true.
func (e *TaskLimitError) Is(target error) bool { return target == ErrTaskLimit }

// StartError says that a background task's command could not start; the
// failed task keeps it (Task.Err) and listeners hear of the task.
type StartError struct {
	Task TaskID
	Err  error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("background task %s could not start: %v", e.Task, e.Err)
}

// Unwrap returns Err.
func (e *StartError) Unwrap() error { return e.Err }

// UnknownTaskError is the error for a task id the executor does not know.
// It matches ErrUnknownTask.
type UnknownTaskError struct{ ID TaskID }

func (e *UnknownTaskError) Error() string { return fmt.Sprintf("unknown bash task %q", string(e.ID)) }

// Is makes errors.Is(err, ErrUnknownTask) true.
func (e *UnknownTaskError) Is(target error) bool { return target == ErrUnknownTask }

// Reasons of an [InputError].
var (
	// ErrNoInput: the task was not started with its input open.
	ErrNoInput = errors.New("the task was not started with input")
	// ErrInputClosed: the task's input is closed, by an earlier write's
	// EOF or by the command itself.
	ErrInputClosed = errors.New("the task's input is closed")
	// ErrTaskEnded: the task has ended; nothing reads its input.
	ErrTaskEnded = errors.New("the task has ended")
	// ErrInputBlocked: the command did not read its input within the
	// write's wait (its pipe is full); InputError.Written says how much of
	// it was written.
	ErrInputBlocked = errors.New("the command is not reading its input")
)

// InputError is a write to a task's input that could not be made, or not
// whole.
type InputError struct {
	ID      TaskID
	Written int // bytes of the data written before the error
	Err     error
}

func (e *InputError) Error() string {
	return fmt.Sprintf("input to task %s: %v (%d bytes written)", e.ID, e.Err, e.Written)
}

// Unwrap returns Err.
func (e *InputError) Unwrap() error { return e.Err }

// LinkError says that the link to the machine that runs the commands (a
// remote executor's connection) failed: the call could not be made, or its
// answer never came, so its outcome is unknown. Task, when set, names a
// task whose state is unknown since the link was lost.
type LinkError struct {
	// Host names the machine.
	Host string
	// Task is the task asked about, if any.
	Task TaskID
	// InFlight is set when the call had been sent: what it did there (a
	// command it ran) is unknown.
	InFlight bool
	// Err is why: ErrLinkLost, or the error of the failed connection.
	Err error
}

// ErrLinkLost: the connection to a remote executor ended.
var ErrLinkLost = errors.New("the connection was lost")

// ErrGone: a remote executor's far side is gone for good (a session's pod
// deleted, or its node lost), and with it everything it held: its tasks
// and files. A LinkError's Err wraps it. An executor that makes a far side
// per session gives the session a new one on its next call.
var ErrGone = errors.New("the far side is gone")

func (e *LinkError) Error() string {
	// A dial's error often names the host already (an SSH dialer's does).
	msg := strings.TrimPrefix(fmt.Sprint(e.Err), e.Host+": ")
	if e.Task != "" {
		return fmt.Sprintf("%s: task %s: %s", e.Host, e.Task, msg)
	}
	return fmt.Sprintf("%s: %s", e.Host, msg)
}

// Unwrap returns Err.
func (e *LinkError) Unwrap() error { return e.Err }
