package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/dshgo/dsh/bash"
)

// Version is the protocol version this package speaks. A client and a
// server of different versions refuse each other in the handshake, so that
// neither drops what the other's messages carry. Version 2 added a spec's
// unsandboxed, input and terminal fields and writeInput: a version 1 far
// side would have run such a task with no input and no terminal.
const Version = 3

// The methods of the protocol. Calls go from the client to the server;
// methodOutput, methodTaskDone and methodTaskWaiting are notifications
// from the server;
// methodCancel is a notification from the client.
const (
	methodHello      = "hello"
	methodResolve    = "resolve"
	methodRun        = "run"
	methodStart      = "start"
	methodGet        = "get"
	methodList       = "list"
	methodOwnerOf    = "ownerOf"
	methodReadOutput = "readOutput"
	methodKill       = "kill"
	methodWriteInput = "writeInput"
	methodEndOwner   = "endOwner"
	methodClose      = "close"
	methodCancel     = "$/cancelRequest"
	methodOutput     = "output"
	methodTaskDone   = "taskDone"
	// methodTaskWaiting: a task started waiting for input (the far
	// side's OnTaskWaiting); a server that cannot tell never sends it.
	methodTaskWaiting = "taskWaiting"
)

// Hello is the handshake's answer: what the far side is.
type Hello struct {
	// Version is the protocol version of the server.
	Version int `json:"version"`
	// Containment says how the far side holds commands: "sandbox",
	// "cgroup" or "process-group".
	Containment string `json:"containment"`
	// Layer is the sandbox's layer: "jail" or "landlock" ("" without a
	// sandbox, or from a far side too old to say).
	Layer string `json:"layer,omitempty"`
	// Host is the far side's host name, Pid its process id.
	Host string `json:"host"`
	Pid  int    `json:"pid"`
}

type helloParams struct {
	Version int    `json:"version"`
	Client  string `json:"client,omitempty"`
	// Deny are the deny rules the far side must enforce at every exec of
	// the commands it runs for this link (Options.Deny).
	Deny []string `json:"deny,omitempty"`
}

// wireSpec is a bash.ExecSpec without its observer; Stream asks for output
// notifications in its place.
type wireSpec struct {
	Command    string        `json:"command"`
	Workdir    string        `json:"workdir"`
	Timeout    time.Duration `json:"timeout"`
	Owner      string        `json:"owner,omitempty"`
	Workspace  string        `json:"workspace,omitempty"`
	SpillAfter int64         `json:"spillAfter,omitempty"`
	Stream     bool          `json:"stream,omitempty"`
	// Unsandboxed reaches the far side's executor, whose sandbox it is.
	Unsandboxed bool           `json:"unsandboxed,omitempty"`
	Input       bool           `json:"input,omitempty"`
	Terminal    *bash.TermSize `json:"terminal,omitempty"`
}

func toWireSpec(s bash.ExecSpec) wireSpec {
	return wireSpec{Command: s.Command, Workdir: s.Workdir, Timeout: s.Timeout, Owner: s.Owner,
		Workspace: s.Workspace, SpillAfter: s.SpillAfter, Stream: s.OnOutput != nil, Unsandboxed: s.Unsandboxed, Input: s.Input, Terminal: s.Terminal}
}

func (w wireSpec) spec() bash.ExecSpec {
	return bash.ExecSpec{Command: w.Command, Workdir: w.Workdir, Timeout: w.Timeout, Owner: w.Owner,
		Workspace: w.Workspace, SpillAfter: w.SpillAfter, Unsandboxed: w.Unsandboxed, Input: w.Input, Terminal: w.Terminal}
}

// taskParams names a task; ownerParams an owner.
type taskParams struct {
	ID bash.TaskID `json:"id"`
}

// inputParams are a writeInput's: the task, and the bash.Input (its data
// as base64, as encoding/json writes bytes).
type inputParams struct {
	ID     bash.TaskID   `json:"id"`
	Data   []byte        `json:"data,omitempty"`
	EOF    bool          `json:"eof,omitempty"`
	Wait   time.Duration `json:"wait,omitempty"`
	Settle time.Duration `json:"settle,omitempty"`
	Quiet  time.Duration `json:"quiet,omitempty"`
}

type ownerParams struct {
	Owner string `json:"owner"`
}

// cancelParams names the call to cancel, as LSP's $/cancelRequest does.
type cancelParams struct {
	ID uint64 `json:"id"`
}

// outputNote is one piece of a foreground run's live output. Skipped
// counts the bytes the server dropped before it because the client read
// too slowly (live output is best effort; the result holds the truth).
type outputNote struct {
	Call    uint64      `json:"call"`
	Stream  bash.Stream `json:"stream"`
	Text    string      `json:"text"`
	Skipped int64       `json:"skipped,omitempty"`
}

// reply is every call's result: the method's value, or the executor's
// error (both, for an aborted run, which returns what it printed).
// Protocol failures are JSON-RPC errors instead.
type reply struct {
	Spec   *wireSpec       `json:"spec,omitempty"`
	Result *bash.RunResult `json:"result,omitempty"`
	Task   *wireTask       `json:"task,omitempty"`
	Tasks  []wireTask      `json:"tasks,omitempty"`
	Read   *wireRead       `json:"read,omitempty"`
	Owner  string          `json:"owner,omitempty"`
	Killed bool            `json:"killed,omitempty"`
	Hello  *Hello          `json:"hello,omitempty"`
	Err    *wireError      `json:"err,omitempty"`
}

// wireTask is a bash.Task whose Err crosses the wire.
type wireTask struct {
	ID       bash.TaskID     `json:"id"`
	Command  string          `json:"command"`
	Status   bash.TaskStatus `json:"status"`
	ExitCode int             `json:"exitCode"`
	Signal   string          `json:"signal,omitempty"`
	Limit    string          `json:"limit,omitempty"`
	Owner    string          `json:"owner,omitempty"`
	Input    bool            `json:"input,omitempty"`
	Started  time.Time       `json:"started,omitzero"`
	Terminal bool            `json:"terminal,omitempty"`
	// Waiting is Task.WaitingInput, as the far side's kernel said.
	Waiting bool       `json:"waiting,omitempty"`
	Err     *wireError `json:"err,omitempty"`
}

func toWireTask(t bash.Task) wireTask {
	return wireTask{ID: t.ID, Command: t.Command, Status: t.Status, ExitCode: t.ExitCode,
		Signal: t.Signal, Limit: t.Limit, Owner: t.Owner, Input: t.Input, Started: t.Started, Terminal: t.Terminal,
		Waiting: t.WaitingInput, Err: toWireError(t.Err)}
}

func (w wireTask) task(host string) bash.Task {
	return bash.Task{ID: w.ID, Command: w.Command, Status: w.Status, ExitCode: w.ExitCode,
		Signal: w.Signal, Limit: w.Limit, Owner: w.Owner, Input: w.Input, Started: w.Started, Terminal: w.Terminal,
		WaitingInput: w.Waiting, Err: w.Err.err(host)}
}

type wireRead struct {
	Task   wireTask    `json:"task"`
	Stdout bash.Output `json:"stdout"`
	Stderr bash.Output `json:"stderr"`
}

// The kinds of wireError: each is one typed error of package bash.
const (
	kindOther       = "other"
	kindUnknownTask = "unknownTask"
	kindAborted     = "aborted"
	kindClosed      = "closed"
	kindTaskLimit   = "taskLimit"
	kindCommand     = "command"
	kindTimeout     = "timeout"
	kindWorkdir     = "workdir"
	kindWorkspace   = "workspace"
	kindStart       = "start"
	kindCanceled    = "canceled" // the far side's call ended with its context
	kindDeadline    = "deadline"
	kindInput       = "input"
)

// The reasons of a command or workdir error that the tool layer tells apart.
const (
	reasonNotExist   = "notExist"
	reasonNotDir     = "notDirectory"
	reasonPermission = "permission"
	reasonNUL        = "nul"
	reasonEmpty      = "empty"
	reasonHome       = "home"
	reasonServer     = "server"
	reasonOutside    = "outsideSandbox"
	reasonNoInput    = "noInput"
	reasonInputShut  = "inputClosed"
	reasonTaskEnded  = "taskEnded"
	reasonBlocked    = "inputBlocked"
)

// wireError carries a typed error of package bash, with its fields, so
// that the client rebuilds the same type and the model reads the same
// words as it would from the far side's executor.
type wireError struct {
	Kind    string        `json:"kind"`
	Message string        `json:"message"`
	Task    bash.TaskID   `json:"task,omitempty"`
	Path    string        `json:"path,omitempty"`
	Holds   string        `json:"holds,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Scope   int           `json:"scope,omitempty"`
	Limit   int           `json:"limit,omitempty"`
	Offset  int           `json:"offset,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	Cause   *wireError    `json:"cause,omitempty"`
}

// toWireError encodes err (nil for nil).
func toWireError(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Kind: kindOther, Message: err.Error()}
	var (
		ce  *bash.CommandError
		te  *bash.TimeoutError
		we  *bash.WorkdirError
		wse *bash.WorkspaceError
		le  *bash.TaskLimitError
		se  *bash.StartError
		ue  *bash.UnknownTaskError
		ie  *bash.InputError
	)
	switch {
	case errors.As(err, &ie):
		w.Kind, w.Task, w.Limit, w.Reason = kindInput, ie.ID, ie.Written, reasonOf(ie.Err)
		w.Message = ie.Err.Error() // the reason's own words: InputError's come from them again
	case errors.As(err, &se):
		w.Kind, w.Task, w.Cause = kindStart, se.Task, toWireError(se.Err)
	case errors.As(err, &ce):
		w.Kind, w.Offset, w.Reason = kindCommand, ce.Offset, reasonOf(ce.Problem)
	case errors.As(err, &te):
		w.Kind, w.Timeout = kindTimeout, te.Timeout
	case errors.As(err, &we):
		w.Kind, w.Path, w.Reason = kindWorkdir, we.Path, reasonOf(we.Err)
		w.Message = we.Err.Error()
	case errors.As(err, &wse):
		w.Kind, w.Path, w.Holds, w.Reason = kindWorkspace, wse.Path, wse.Holds, reasonOf(wse.Problem)
	case errors.As(err, &le):
		w.Kind, w.Scope, w.Limit = kindTaskLimit, int(le.Scope), le.Limit
	case errors.As(err, &ue):
		w.Kind, w.Task = kindUnknownTask, ue.ID
	case errors.Is(err, bash.ErrUnknownTask):
		w.Kind = kindUnknownTask
	case errors.Is(err, bash.ErrAborted):
		w.Kind = kindAborted
	case errors.Is(err, bash.ErrClosed):
		w.Kind = kindClosed
	case errors.Is(err, context.Canceled):
		w.Kind = kindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		w.Kind = kindDeadline
	}
	return w
}

func reasonOf(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return reasonNotExist
	case errors.Is(err, bash.ErrNotDirectory):
		return reasonNotDir
	case errors.Is(err, bash.ErrOutsideSandbox):
		return reasonOutside
	case errors.Is(err, fs.ErrPermission):
		return reasonPermission
	case errors.Is(err, bash.ErrNULInCommand):
		return reasonNUL
	case errors.Is(err, bash.ErrEmptyCommand):
		return reasonEmpty
	case errors.Is(err, bash.ErrWorkspaceHome):
		return reasonHome
	case errors.Is(err, bash.ErrWorkspaceServer):
		return reasonServer
	case errors.Is(err, bash.ErrNoInput):
		return reasonNoInput
	case errors.Is(err, bash.ErrInputClosed):
		return reasonInputShut
	case errors.Is(err, bash.ErrTaskEnded):
		return reasonTaskEnded
	case errors.Is(err, bash.ErrInputBlocked):
		return reasonBlocked
	}
	return ""
}

// sentinels maps reasons back to the errors they stand for.
var sentinels = map[string]error{
	reasonNotExist: fs.ErrNotExist, reasonNotDir: bash.ErrNotDirectory,
	reasonPermission: fs.ErrPermission, reasonNUL: bash.ErrNULInCommand,
	reasonEmpty: bash.ErrEmptyCommand, reasonHome: bash.ErrWorkspaceHome,
	reasonServer: bash.ErrWorkspaceServer, reasonOutside: bash.ErrOutsideSandbox,
	reasonNoInput: bash.ErrNoInput, reasonInputShut: bash.ErrInputClosed,
	reasonTaskEnded: bash.ErrTaskEnded, reasonBlocked: bash.ErrInputBlocked,
}

// err rebuilds the typed error (nil for nil). An infrastructure error of
// the far side names host.
func (w *wireError) err(host string) error {
	if w == nil {
		return nil
	}
	switch w.Kind {
	case kindStart:
		return &bash.StartError{Task: w.Task, Err: w.Cause.err(host)}
	case kindCommand:
		return &bash.CommandError{Problem: w.sentinel(), Offset: w.Offset}
	case kindTimeout:
		return &bash.TimeoutError{Timeout: w.Timeout}
	case kindWorkdir:
		return &bash.WorkdirError{Path: w.Path, Err: w.sentinel()}
	case kindWorkspace:
		return &bash.WorkspaceError{Path: w.Path, Holds: w.Holds, Problem: w.sentinel()}
	case kindTaskLimit:
		return &bash.TaskLimitError{Scope: bash.LimitScope(w.Scope), Limit: w.Limit}
	case kindInput:
		return &bash.InputError{ID: w.Task, Written: w.Limit, Err: w.sentinel()}
	case kindUnknownTask:
		if w.Task == "" {
			return bash.ErrUnknownTask
		}
		return &bash.UnknownTaskError{ID: w.Task}
	case kindAborted:
		return fmt.Errorf("%s: %w", host, bash.ErrAborted)
	case kindClosed:
		return fmt.Errorf("%s: %w", host, bash.ErrClosed)
	case kindCanceled:
		return fmt.Errorf("%s: %s: %w", host, w.Message, context.Canceled)
	case kindDeadline:
		return fmt.Errorf("%s: %s: %w", host, w.Message, context.DeadlineExceeded)
	}
	return fmt.Errorf("%s: %s", host, w.Message)
}

func (w *wireError) sentinel() error {
	if s, ok := sentinels[w.Reason]; ok {
		return s
	}
	return errors.New(w.Message)
}

// DefaultMaxMessage bounds one protocol message, so that a far side gone
// wrong cannot make the other side buffer without end. The largest
// legitimate messages hold a few streams of MaxOutputBytes each.
const DefaultMaxMessage = 64 << 20

// ErrMessageTooLarge is a message longer than the bound: the connection
// ends.
var ErrMessageTooLarge = errors.New("remote: protocol message too large")

// lineStream frames JSON-RPC messages as one JSON text per line (JSON
// texts hold no raw newline), each at most max bytes.
type lineStream struct {
	r   *bufio.Reader
	w   io.Writer
	c   io.Closer
	max int
}

func newLineStream(rwc io.ReadWriteCloser, max int) *lineStream {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	return &lineStream{r: bufio.NewReaderSize(rwc, 64<<10), w: rwc, c: rwc, max: max}
}

// WriteObject writes obj as one line, in one write.
func (s *lineStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = s.w.Write(append(b, '\n'))
	return err
}

// ReadObject reads one line and decodes it into v.
func (s *lineStream) ReadObject(v any) error {
	var line []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		if len(line)+len(frag) > s.max {
			return ErrMessageTooLarge
		}
		if err == nil && line == nil {
			return json.Unmarshal(frag, v) // the whole line was buffered
		}
		line = append(line, frag...)
		if err == nil {
			return json.Unmarshal(line, v)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

func (s *lineStream) Close() error { return s.c.Close() }
