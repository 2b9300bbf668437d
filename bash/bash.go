// Package bash is the executor seam behind the model-facing shell tools.
//
// It defines what a shell executor does (the [Executor] interface) and the
// vocabulary it speaks, and it starts no process itself. The tool layer
// (package toolbash) shapes everything the model sees from these types alone,
// so a local, sandboxed or remote executor can be swapped in without changing
// one byte of model-facing text.
//
// Every implementation honours these rules:
//
//   - Resolve fills the defaults: the working directory (the request's, else
//     the executor's configured default, else the process cwd) and the timeout
//     (the request's, else the default, capped at the maximum). A negative
//     timeout is an error. A command no shell can run (one holding a NUL
//     byte) is a [*CommandError], and no process is started for it, by
//     Resolve, Run or Start. Run and Start never re-default a spec.
//   - Run is the foreground call. It returns an error only for an
//     infrastructure failure: an unusable working directory, no shell, a
//     context that is already done, a closed executor. A non-zero exit, a
//     timeout kill and a death by signal are all a [RunResult], never an
//     error. Cancelling the context kills the command with the same
//     escalation as a timeout, and Run then returns an error wrapping
//     [ErrAborted] together with what the command printed; a context that
//     ends before the command has started (while its jail starts, say)
//     gives an error wrapping ErrAborted too, from Run and Start alike.
//   - Start is the background call: it returns at once and no timeout
//     applies. The spec's Owner is stored on the task and never changes.
//   - Kill, a timeout, an abort and Close all stop a command the same way:
//     SIGTERM to every process the command started, then SIGKILL after a
//     grace period. Kill reports false for a task that had already finished.
//     Whatever ends the shell, its own wait status is reported: an exit code,
//     or the signal that killed it (RunResult.Signal, Task.Signal). An
//     executor that cannot see signals (one behind a link that only carries
//     exit codes) reports the exit code it got and no signal; the tool layer
//     then shows the exit code where it would have named the signal.
//   - Errors the caller can act on are typed ([*CommandError],
//     [*TimeoutError], [*WorkdirError], [*WorkspaceError], [*TaskLimitError], [*StartError],
//     [*UnknownTaskError], or one wrapping [ErrAborted] or [ErrClosed]); the
//     tool layer writes the model's words from them, so every executor reads
//     the same. Any other error is the executor's own infrastructure failure.
//   - Every method that can block takes a context first and gives up when it
//     is done (Run and Kill stop the command; the others only stop waiting).
//   - ReadOutput returns only what the task printed since the previous read
//     of that task; nothing is delivered twice. When bytes slid out of memory
//     before they were read, the read says so and names the spill files that
//     hold the complete streams, when they are safely available.
//   - A task started with ExecSpec.Input reads a pipe WriteInput writes
//     to (every other command reads /dev/null). A write never buffers in
//     the executor: a command that does not read fails it with
//     [ErrInputBlocked] once its wait has passed. WriteInput then waits,
//     bounded by the same wait, until the task waits for input again with
//     its output quiet (an executor that can read the kernel's state of
//     its processes), or else until its output settles, and returns it as
//     ReadOutput would. A snapshot of a running task says whether it
//     waits for input (Task.WaitingInput) where the executor can tell.
//     Input to a task started without it, ended, or whose input was
//     closed is an [*InputError].
//   - Every listener registered with OnTaskDone is called exactly once per
//     task (background, adopted or failed to spawn), and never once Close has
//     begun. A panicking listener is contained and does not starve the others.
//   - Close kills every running task with its whole process tree, waits for
//     them, removes spill files, and leaves no process and no goroutine behind.
//   - Text in an [Output] is valid UTF-8: a cut never splits a character and
//     invalid bytes read as U+FFFD. Spill files keep the raw bytes.
package bash

import (
	"context"
	"time"
)

// Executor runs shell commands for the tools. Implementations must be safe
// for concurrent use.
type Executor interface {
	// Resolve turns a request into a spec with every default applied.
	Resolve(ctx context.Context, req ExecRequest) (ExecSpec, error)
	// Run runs a command in the foreground until it ends, times out, or ctx
	// is cancelled.
	Run(ctx context.Context, spec ExecSpec) (RunResult, error)
	// Start runs a command in the background and returns once it has
	// started (or failed to).
	Start(ctx context.Context, spec ExecSpec) (Task, error)
	// Get returns a snapshot of a task.
	Get(ctx context.Context, id TaskID) (Task, error)
	// List returns snapshots of every task the executor still remembers,
	// oldest first.
	List(ctx context.Context) ([]Task, error)
	// OwnerOf returns the owner token stored on a task at spawn ("" for none).
	OwnerOf(ctx context.Context, id TaskID) (string, error)
	// ReadOutput returns what the task printed since the previous read.
	ReadOutput(ctx context.Context, id TaskID) (TaskRead, error)
	// Kill stops a task and its whole process tree and waits until it is
	// gone or ctx is done. It returns false when the task had already ended.
	Kill(ctx context.Context, id TaskID) (bool, error)
	// WriteInput writes to the standard input of a task started with
	// ExecSpec.Input, then waits for what the task prints in response (see
	// Input) and returns it as ReadOutput would. An error about the input
	// itself is an [*InputError].
	WriteInput(ctx context.Context, id TaskID, in Input) (TaskRead, error)
	// OnTaskDone registers fn to be called once for every task that ends
	// from now on. The returned function unsubscribes it.
	OnTaskDone(fn func(Task)) (unsubscribe func())
	// Close stops every task, waits for them and frees all resources.
	Close() error
}

// ExecRequest is what a caller asks for. Zero fields take the executor's
// defaults in Resolve.
type ExecRequest struct {
	// Command is run as `bash -c Command`.
	Command string
	// Workdir is the working directory; empty means the executor default.
	// A relative Workdir is resolved against the executor default.
	Workdir string
	// Timeout bounds a foreground run; zero means the executor default and a
	// value above the maximum is capped. A negative Timeout is an error.
	Timeout time.Duration
	// Owner is the caller's owner token; empty means no owner.
	Owner string
	// Workspace is the directory the caller's session works in (its MCP
	// root, its ACP cwd); empty means the executor's default directory. An
	// executor that confines commands lets them write there; others ignore
	// it.
	Workspace string
}

// ExecSpec is a fully resolved request, as Run and Start take it.
type ExecSpec struct {
	Command string
	// Workdir is absolute.
	Workdir string
	// Timeout is positive; Start ignores it.
	Timeout time.Duration
	// Owner is stored on the task (also on a task adopted from a foreground
	// run).
	Owner string
	// Workspace is absolute (see ExecRequest.Workspace).
	Workspace string
	// Input keeps the command's standard input open, a pipe that
	// WriteInput writes to, until WriteInput closes it or the command
	// ends; otherwise stdin is /dev/null. For Start only: Run refuses it.
	Input bool
	// Terminal, if set, runs the command in a pseudo-terminal of this
	// size (it implies Input): its stdin, stdout and stderr are the
	// terminal, whose controlling side stays with the executor; it is the
	// controlling terminal of the command's session. What the task prints
	// reads as text (control sequences removed, each line as carriage
	// returns left it) on Stdout; the spill file keeps the raw bytes.
	// For Start only.
	Terminal *TermSize
	// Unsandboxed runs this one command outside the executor's sandbox,
	// if it has one (the user said yes to exactly this call); an executor
	// without a sandbox ignores it. Only a caller that asked the user may
	// set it: the tool layer never sets it of itself.
	Unsandboxed bool
	// SpillAfter, if positive, asks for a complete spill file of every
	// stream longer than this many bytes, even when the stream still fits
	// the executor's memory: a caller that shows less than the executor
	// keeps (a text budget) can then name a file that holds it all.
	SpillAfter int64
	// OnOutput, if set, is called during a foreground run with each piece of
	// output as it arrives, stdout and stderr alike, in the order they were
	// read, as a terminal would show them. Pieces are valid UTF-8 and never
	// split a character; calls are never concurrent, and they end before Run
	// returns. It must not block. An executor that cannot stream may call it
	// less often or not at all: the result stays the whole truth.
	//
	// text is only valid during the call (the executor reuses its memory, so
	// that streaming a flood of output costs no allocation per piece): an
	// observer that keeps any of it must copy it.
	OnOutput func(stream Stream, text []byte)
}

// Stream names an output stream.
type Stream string

// The two output streams.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// RunResult is the outcome of a foreground run.
type RunResult struct {
	// ExitCode is the shell's exit code; -1 when it died by a signal.
	ExitCode int
	// Signal names the signal that ended the shell ("SIGTERM"), empty when
	// it exited normally.
	Signal string
	// TimedOut is set whenever the executor's timer fired, however the
	// command then ended (even when it trapped SIGTERM and exited 0).
	TimedOut bool
	// Aborted is set when the caller's context ended the run.
	Aborted bool
	// Timeout is the timeout that applied.
	Timeout time.Duration
	// Stdout and Stderr are the tails of the two streams.
	Stdout, Stderr Output
	// Adopted names the background task that took over processes the
	// command left running after its shell exited; empty when none were left.
	Adopted TaskID
	// LeftoversKilled is set when processes outlived the shell but could not
	// be adopted (the caller's task limit was reached, or the run was
	// Unsandboxed: see LeftoversOutside), so they were killed.
	LeftoversKilled bool
	// LeftoversOutside is set with LeftoversKilled for an Unsandboxed run:
	// the user's yes covered that one command, not processes that would
	// run on outside the sandbox after it, so they are never adopted.
	LeftoversOutside bool `json:",omitempty"`
	// Limit names the resource limit that ended the command ("memory
	// limit 2 GiB"), empty when none did.
	Limit string `json:",omitempty"`
	// Note is the sandbox's word on what the command did that the model
	// must know to go on (a repository it removed cannot be made anew
	// in the sandbox), empty when it has none.
	Note string `json:",omitempty"`
	// Refused are the programs the command tried to run that a deny rule
	// refused at their exec (see Refusal), at most MaxRefusals of them;
	// RefusedMore counts the others.
	Refused     []Refusal `json:",omitempty"`
	RefusedMore int       `json:",omitempty"`
}

// Refusal is a program a command tried to run that the executor refused
// when the kernel had loaded it, before its first instruction, because a
// deny rule matches it: its real argv, after every expansion, in any
// process of the command (a script's, xargs', make's). The process was
// killed; the command went on as it does when a program is killed.
type Refusal struct {
	// Program is the program's resolved path, as the executor saw it.
	Program string
	// Argv is the argv it was given.
	Argv []string
	// Rule is the pattern of the deny rule that matched.
	Rule string
}

// MaxRefusals is how many refusals one result lists.
const MaxRefusals = 5

// Output is the text of one stream.
type Output struct {
	// Text is valid UTF-8.
	Text string
	// Truncated is set when some of the stream is not in Text: for a run,
	// its head was cut to keep the tail; for a read, bytes slid out of
	// memory before they were read.
	Truncated bool
	// SpillPath is the absolute path of a file holding the complete raw
	// stream, as the executor's own commands see it (on the executor's
	// machine, inside its jail: the model reads it with the bash tool of the
	// same executor, never on the caller's machine), whenever one is safely
	// available (a stream gets one once it passes the executor's memory, or
	// ExecSpec.SpillAfter), also when nothing was cut; empty otherwise.
	SpillPath string
	// Bytes is the length of the whole stream so far in raw bytes, read
	// or not, kept or cut (what a complete spill file holds); zero from
	// an executor that does not count them.
	Bytes int64 `json:",omitempty"`
}

// TaskID names a task: "bash-1", "bash-2", …
type TaskID string

// TaskStatus is where a task is in its life.
type TaskStatus string

// The statuses a task can have.
const (
	StatusRunning   TaskStatus = "running"
	StatusCompleted TaskStatus = "completed"
	StatusKilled    TaskStatus = "killed"
	// StatusFailed is a task whose command could not be started at all.
	StatusFailed TaskStatus = "failed"
)

// Task is a snapshot of a background task.
type Task struct {
	ID      TaskID
	Command string
	Status  TaskStatus
	// ExitCode is the shell's exit code once the task has ended (-1 after a
	// death by signal).
	ExitCode int
	// Signal names the signal that ended the shell, if one did.
	Signal string
	// Limit names the resource limit that ended the command ("memory
	// limit 2 GiB"), empty when none did.
	Limit string
	// Owner is the owner token stored at spawn; empty for none.
	Owner string
	// Input: the task was started with its input open (ExecSpec.Input).
	Input bool `json:",omitempty"`
	// Started is when the task was started, on the executor's clock.
	Started time.Time
	// Terminal: the task runs in a pseudo-terminal (ExecSpec.Terminal).
	Terminal bool `json:",omitempty"`
	// WaitingInput: the task runs and waits for input, as the kernel's
	// state of its processes said when the snapshot was taken (one is
	// blocked reading its input, none runs, and all it printed was
	// read). False when it does not, or when the executor cannot tell.
	WaitingInput bool `json:",omitempty"`
	// Err says why a StatusFailed task could not start: a [*WorkdirError],
	// a [*CommandError], or an infrastructure error of the executor.
	Err error
}

// Done reports whether the task has ended.
func (t Task) Done() bool { return t.Status != StatusRunning }

// TaskRead is what one ReadOutput call returns.
type TaskRead struct {
	// Task is the task's state as of this read: when it says the task has
	// ended, the read holds everything the task printed.
	Task Task
	// Stdout and Stderr hold the new output of each stream. Truncated means
	// some of it was lost before this read (see Output).
	Stdout, Stderr Output
	// Refused are the programs the task tried to run that a deny rule
	// refused (see RunResult.Refused) and that no read returned before;
	// RefusedMore counts those beyond MaxRefusals. An executor may hold
	// them until the task has ended.
	Refused     []Refusal `json:",omitempty"`
	RefusedMore int       `json:",omitempty"`
}

// Input is one write to a task's standard input (Executor.WriteInput).
type Input struct {
	// Data is written as it is; it may be empty.
	Data []byte
	// EOF closes the input after Data: the command reads end of file. On
	// a terminal it types Ctrl-D (the terminal stays open).
	EOF bool
	// Wait bounds the whole call: the write (a command that does not read
	// its input fails it with ErrInputBlocked once Wait has passed) and
	// the wait for output. Zero means DefaultInputWait.
	Wait time.Duration
	// Quiet: once Data is written, the call returns as soon as the task
	// waits for input again (an executor that can read the kernel's
	// state of the task's processes knows it: one is blocked reading the
	// input, none runs) and has printed nothing for Quiet. Zero means
	// DefaultInputQuiet.
	Quiet time.Duration
	// Settle is the fallback, where the executor cannot know whether the
	// task waits for input (the kernel does not say, or the task sleeps
	// without reading it): the call returns when the task has printed
	// something and then nothing more for Settle. Either way it returns
	// when Wait has passed (a task that prints nothing in response), or
	// when the task has ended. A call with no Data and no EOF only reads:
	// output the task printed before it and nobody read yet counts as its
	// answer. Zero means DefaultInputSettle.
	Settle time.Duration
}

// TermSize is a terminal's size in character cells. A side below 1 or
// above 65535 (what the kernel holds) means DefaultTermSize.
type TermSize struct {
	Rows, Cols int
}

// DefaultTermSize is the size of a terminal whose size is not given.
var DefaultTermSize = TermSize{Rows: 24, Cols: 80}

// Defaults of Input.
const (
	DefaultInputWait   = 2 * time.Second
	DefaultInputSettle = 200 * time.Millisecond
	DefaultInputQuiet  = 2 * time.Millisecond
)

// Lossy reports whether any output was lost before this read.
func (r TaskRead) Lossy() bool { return r.Stdout.Truncated || r.Stderr.Truncated }
