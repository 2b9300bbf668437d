// Package toolbash is the model-facing shell tools: bash, bash_output,
// bash_kill, bash_input and bash_tasks. It owns their schemas,
// descriptions and every byte of text the model sees, the fence that keeps
// one session out of another's background tasks, per-session working
// directories, background completion notices, and how editors draw each
// call.
//
// It never touches a process: everything about processes goes through a
// bash.Executor, so a local, sandboxed or remote executor changes nothing
// the model sees. Every text comes from a pure function of what the
// executor returned, with golden tests (testdata/*.txtar).
//
// Ownership: a task's owner is the owner token stored on it by the
// executor at spawn (the calling session's ID). bash_output, bash_kill and
// bash_input refuse a task owned by another session, and a caller with no
// session may touch only tasks with no owner; bash_tasks lists only the
// session's own.
package toolbash

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/tools"
	"github.com/google/jsonschema-go/jsonschema"
)

// The tools' names.
const (
	BashName   = "bash"
	OutputName = "bash_output"
	KillName   = "bash_kill"
	InputName  = "bash_input"
	TasksName  = "bash_tasks"
)

// Options configures the tools. A nil *Options means defaults.
type Options struct {
	// Notify, if set, is told of each completion notice as it is queued
	// for the session that owns the finished task (its ID, the task's owner
	// token), for front ends that push notices at once (MCP log
	// notifications). It is called on an executor goroutine and should
	// return promptly. Whether or not it is set, the notice also waits for
	// TakeNotices.
	Notify func(sessionID, notice string)
	// MaxResultChars is the budget, in characters, of the whole text of one
	// result of bash or bash_output (see budget.go). Zero means
	// DefaultMaxResultChars; negative means no budget.
	MaxResultChars int
	// AskUnsandboxed, if set, gives bash the argument "unsandboxed": a
	// call that sets it asks the user, through AskUnsandboxed, to run that
	// one call outside the executor's sandbox (bash.ExecSpec.Unsandboxed).
	// It is asked every time, whatever rules allow or the user allowed
	// before, and only AllowOnce runs the call; a client that cannot ask
	// (ErrCannotAsk) refuses it. Set it only where the executor sandboxes
	// and the front end can ask its user.
	AskUnsandboxed Asker
	// Sandbox, if set, says that the executor sandboxes commands, and what
	// its sandbox allows; with AskUnsandboxed, the argument's description
	// says it, so that the model knows what needs no escape. Nil: commands
	// are not sandboxed (a call that sets unsandboxed is told so).
	Sandbox *SandboxFacts
	// StartWait bounds how long a bash call that starts a task with input
	// or tty waits for the program to first wait for input, so that its
	// result holds the program's banner and first prompt. Zero means
	// bash.DefaultInputWait; negative means the call returns at once.
	StartWait time.Duration
	// Observe, if set, is told of the end of every background task of
	// the executor (an *observe.TaskEnd), once. Each call's event, if its
	// context carries one (observe.WithCall), is filled whether or not
	// it is set.
	Observe observe.Sink
}

// Tools is the five shell tools over one executor. Make it with New and
// Close it when done (that stops the notices); the executor stays the
// caller's. The zero Tools can describe the tools (Tools) but not run them.
type Tools struct {
	exec      Executor
	unsub     func()
	unsubWait func() // of the notices of tasks that wait for input
	maxChars  int
	notify    func(sessionID, notice string)
	notices   noticeBox // what waits for each session (TakeNotices)
	askOut    Asker     // Options.AskUnsandboxed
	outDesc   string    // the unsandboxed argument's description, where askOut is set
	sandbox   bool      // Options.Sandbox is set
	startWait time.Duration
	observe   observe.Sink // Options.Observe
}

// Executor is what the tools need of an executor. Every bash.Executor is
// one; the tools never close it.
type Executor interface {
	Resolve(ctx context.Context, req bash.ExecRequest) (bash.ExecSpec, error)
	Run(ctx context.Context, spec bash.ExecSpec) (bash.RunResult, error)
	Start(ctx context.Context, spec bash.ExecSpec) (bash.Task, error)
	List(ctx context.Context) ([]bash.Task, error)
	OwnerOf(ctx context.Context, id bash.TaskID) (string, error)
	ReadOutput(ctx context.Context, id bash.TaskID) (bash.TaskRead, error)
	Kill(ctx context.Context, id bash.TaskID) (bool, error)
	WriteInput(ctx context.Context, id bash.TaskID, in bash.Input) (bash.TaskRead, error)
	OnTaskDone(fn func(bash.Task)) (unsubscribe func())
}

// sessionEnder is an executor that keeps something per owner token beyond
// its tasks (a sandbox's jail): EndSession tells it the session is over.
type sessionEnder interface {
	EndOwner(ctx context.Context, owner string) error
}

// New makes the tools over exec.
func New(exec Executor, opts *Options) *Tools {
	if opts == nil {
		opts = &Options{}
	}
	t := &Tools{exec: exec, maxChars: opts.MaxResultChars, notify: opts.Notify, askOut: opts.AskUnsandboxed, sandbox: opts.Sandbox != nil,
		observe: opts.Observe}
	if t.askOut != nil {
		t.outDesc = describeUnsandboxed(opts.Sandbox)
	}
	if t.maxChars == 0 {
		t.maxChars = DefaultMaxResultChars
	}
	t.startWait = opts.StartWait
	if t.startWait == 0 {
		t.startWait = bash.DefaultInputWait
	}
	t.unsub = exec.OnTaskDone(t.taskDone)
	if w, ok := exec.(waitWatcher); ok {
		t.unsubWait = w.OnTaskWaiting(t.taskWaiting)
	}
	return t
}

// waitWatcher is an executor that tells when a task starts waiting for
// input (local.Executor, and the sandbox and remote executors).
type waitWatcher interface {
	OnTaskWaiting(fn func(bash.Task)) (unsubscribe func())
}

// taskWaiting queues the notice of a task that started waiting for input
// for its owner.
func (t *Tools) taskWaiting(task bash.Task) {
	if task.Owner == "" {
		return
	}
	if text, ok := t.notices.addWaiting(task); ok && t.notify != nil {
		t.notify(task.Owner, text)
	}
}

// taskDone queues the notice of an ended task for its owner, and tells
// the operators.
func (t *Tools) taskDone(task bash.Task) {
	t.taskEnded(task)
	// Unowned tasks have nobody to tell; a task that failed to start was
	// reported by the call that started it.
	if task.Owner == "" || task.Status == bash.StatusFailed {
		return
	}
	if text, ok := t.notices.add(task); ok && t.notify != nil {
		t.notify(task.Owner, text)
	}
}

// Close stops the notices.
func (t *Tools) Close() {
	if t.unsub != nil {
		t.unsub()
	}
	if t.unsubWait != nil {
		t.unsubWait()
	}
}

// List returns the tool definitions: bash, bash_output, bash_kill,
// bash_input and bash_tasks.
func (t *Tools) List() []*tools.Tool {
	yes, no := true, false
	return []*tools.Tool{
		{
			Name:          BashName,
			Description:   bashDescription,
			InputSchema:   bashSchema(t.outDesc),
			Withheld:      t.withheld(),
			Validate:      validateBash,
			Annotations:   tools.Annotations{Destructive: &yes, OpenWorld: &yes},
			AskPermission: true,
			Execute:       t.bash,
			PresentCall:   presentBashCall,
			PresentResult: presentBashResult,
		},
		{
			Name:        OutputName,
			Description: bashOutputDescription,
			InputSchema: taskSchema("The id of the background task, as bash returned it (e.g. bash-3)."),
			Annotations: tools.Annotations{ReadOnly: true, OpenWorld: &no},
			Execute:     t.output,
			PresentCall: presentTaskCall(OutputName, "Read output from background task "),
		},
		{
			Name:        KillName,
			Description: bashKillDescription,
			InputSchema: taskSchema("The id of the background task to stop (e.g. bash-3)."),
			Annotations: tools.Annotations{Destructive: &yes, Idempotent: true, OpenWorld: &no},
			Execute:     t.kill,
			PresentCall: presentTaskCall(KillName, "Kill background task "),
		},
		{
			Name:        InputName,
			Description: bashInputDescription,
			InputSchema: inputSchema(),
			Annotations: tools.Annotations{Destructive: &yes, OpenWorld: &yes},
			// What it writes runs in the program that reads it (a REPL
			// runs code): asked about as bash is, where nothing else is.
			AskPermission: true,
			Execute:       t.input,
			PresentCall:   presentInputCall,
			PresentResult: presentInputResult,
		},
		{
			Name:        TasksName,
			Description: bashTasksDescription,
			InputSchema: objectSchema(nil, map[string]*jsonschema.Schema{}),
			Annotations: tools.Annotations{ReadOnly: true, OpenWorld: &no},
			Execute:     t.tasks,
			PresentCall: func(json.RawMessage) tools.CallPresentation {
				return tools.CallPresentation{Title: "List background tasks", Kind: tools.KindExecute}
			},
			PresentResult: presentInputResult,
		},
	}
}

// EndSession kills every running task the session owns, at once, and
// returns when they are all gone; the session's waiting notices are
// forgotten. Front ends call it when a session ends.
func (t *Tools) EndSession(ctx context.Context, sessionID string) {
	if sessionID == "" {
		return // unowned tasks belong to no session
	}
	defer t.notices.drop(sessionID)
	list, _ := t.exec.List(ctx) // a failed list leaves nothing to kill here
	var wg sync.WaitGroup
	for _, task := range list {
		if task.Owner == sessionID && !task.Done() {
			wg.Go(func() { _, _ = t.exec.Kill(ctx, task.ID) })
		}
	}
	wg.Wait()
	if se, ok := t.exec.(sessionEnder); ok {
		_ = se.EndOwner(ctx, sessionID) // nothing of the session is left to tell
	}
}

// Register adds the tools to r.
func (t *Tools) Register(r *tools.Registry) error { return r.Register(t.List()...) }

// bashSchema is the bash tool's input schema; it has the argument
// unsandboxed, so described, where unsandboxed is not "".
func bashSchema(unsandboxed string) *jsonschema.Schema {
	zero := 0.0
	s := objectSchema([]string{"command", "description"}, map[string]*jsonschema.Schema{
		"command": {Type: "string", Pattern: `\S`,
			Description: "The command, run as `bash -c COMMAND`. Nothing persists between calls: use workdir, not cd."},
		"description": {Type: "string", Pattern: `\S`,
			Description: "What the command does, in 5-10 words of active voice (\"List files in src\"). Shown to the user; it does not affect the run."},
		"timeoutMs": {Type: "number", ExclusiveMinimum: &zero,
			Description: "Timeout in milliseconds for a foreground run. The executor applies its default when omitted and caps it at its maximum."},
		"workdir": {Type: "string",
			Description: "Working directory for this call. Default: the session's directory; a relative path is taken from there."},
		"run_in_background": {Type: "boolean",
			Description: "Return a task id at once and run without a timeout; read output with bash_output, stop with bash_kill."},
		"input": {Type: "boolean",
			Description: "Start in the background (as run_in_background) with stdin open, for a program that asks questions or a REPL: write to it with bash_input."},
		"tty": {Type: "boolean",
			Description: "As input, in a terminal (24x80): for programs that need one (prompts that read from the terminal, git add -p, a REPL's line editing, Ctrl-C). Their output reads as plain text, and the echo of what you type is left out of it."},
	})
	if unsandboxed != "" {
		s.Properties["unsandboxed"] = &jsonschema.Schema{Type: "boolean", Description: unsandboxed}
	}
	return s
}

func taskSchema(desc string) *jsonschema.Schema {
	one := 1
	return objectSchema([]string{"task_id"}, map[string]*jsonschema.Schema{"task_id": {Type: "string", MinLength: &one, Description: desc}})
}

// objectSchema is a tool's input schema: an object of these properties
// and no other (the registry reads arguments exactly).
func objectSchema(required []string, props map[string]*jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: required, Properties: props,
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

// bashArgs are the bash tool's arguments, after schema validation.
type bashArgs struct {
	Command     string   `json:"command"`
	Description string   `json:"description"`
	TimeoutMs   *float64 `json:"timeoutMs"`
	Workdir     *string  `json:"workdir"`
	Background  bool     `json:"run_in_background"`
	Input       bool     `json:"input"`
	TTY         bool     `json:"tty"`
	Unsandboxed bool     `json:"unsandboxed"`
}

// inBackground reports whether the call starts a background task: with
// run_in_background, input or tty.
func (a bashArgs) inBackground() bool { return a.Background || a.Input || a.TTY }

func (t *Tools) bash(ctx context.Context, call *tools.Call) (*tools.Result, error) {
	var a bashArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return nil, err
	}
	noteBash(ctx, a)
	req := bash.ExecRequest{Command: a.Command, Workdir: callWorkdir(a, call), Owner: call.Session.ID, Workspace: call.Session.Cwd}
	if a.TimeoutMs != nil {
		req.Timeout = msDuration(*a.TimeoutMs)
	}
	spec, err := t.exec.Resolve(ctx, req)
	if err != nil {
		return nil, errors.New(errorText(err))
	}
	if t.maxChars > 0 {
		spec.SpillAfter = spillAfter(t.maxChars)
	}
	if a.Unsandboxed && t.askOut != nil {
		if refused := t.askUnsandboxed(ctx, call, a, req.Workdir); refused != nil {
			return refused, nil
		}
		spec.Unsandboxed = true
	}
	if a.inBackground() {
		spec.Input = a.Input || a.TTY
		if a.TTY {
			size := bash.DefaultTermSize
			spec.Terminal = &size
		}
		task, err := t.exec.Start(ctx, spec)
		if err != nil {
			return nil, errors.New(errorText(err))
		}
		noteStart(ctx, task.ID)
		if !spec.Input || t.startWait < 0 {
			return tools.TextResult(startText(task)), nil
		}
		return tools.TextResult(t.firstPrompt(ctx, call, task)), nil
	}
	if call.Output != nil {
		spec.OnOutput = func(_ bash.Stream, text []byte) { call.Output(text) }
	}
	res, err := t.exec.Run(ctx, spec)
	if errors.Is(err, bash.ErrAborted) {
		return aborted(ctx), nil
	}
	if err != nil {
		return nil, errors.New(errorText(err))
	}
	noteRun(ctx, res)
	out := tools.TextResult(runText(res, t.maxChars))
	out.Meta = exitMeta(res)
	return out, nil
}

// msDuration converts a positive millisecond count, rounded up to whole
// milliseconds (so a timeout is never reported as 0ms, and what is reported
// is what applied), saturating instead of overflowing (the executor caps it
// anyway).
func msDuration(ms float64) time.Duration {
	d := math.Ceil(ms) * float64(time.Millisecond)
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

type taskArgs struct {
	TaskID string `json:"task_id"`
}

// ownedTask checks that the caller may touch the task.
func (t *Tools) ownedTask(ctx context.Context, call *tools.Call) (bash.TaskID, error) {
	var a taskArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return "", err
	}
	id := bash.TaskID(a.TaskID)
	noteTask(ctx, id)
	owner, err := t.exec.OwnerOf(ctx, id)
	if err != nil {
		return "", errors.New(errorText(err))
	}
	if owner != "" && owner != call.Session.ID {
		return "", errors.New(foreignTaskText(id))
	}
	return id, nil
}

func (t *Tools) output(ctx context.Context, call *tools.Call) (*tools.Result, error) {
	id, err := t.ownedTask(ctx, call)
	if err != nil {
		return nil, err
	}
	r, err := t.exec.ReadOutput(ctx, id)
	if err != nil {
		return nil, errors.New(errorText(err))
	}
	t.seen(call, r.Task)
	return tools.TextResult(readText(r, t.maxChars)), nil
}

func (t *Tools) kill(ctx context.Context, call *tools.Call) (*tools.Result, error) {
	id, err := t.ownedTask(ctx, call)
	if err != nil {
		return nil, err
	}
	// Before the kill: the executor tells its listeners of the end before
	// Kill returns, and this result says the task has ended, whether it
	// was killed now or had finished before.
	t.notices.seenEnd(call.Session.ID, id)
	killed, err := t.exec.Kill(ctx, id)
	if err != nil {
		return nil, errors.New(errorText(err))
	}
	return tools.TextResult(killText(id, killed)), nil
}
