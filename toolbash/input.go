package toolbash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/tools"
	"github.com/google/jsonschema-go/jsonschema"
)

// MaxInputBytes bounds the input of one bash_input call.
const MaxInputBytes = 64 << 10

// maxInputWait caps bash_input's wait_ms.
const maxInputWait = 30 * time.Second

func inputSchema() *jsonschema.Schema {
	one, zero := 1, 0.0
	return objectSchema([]string{"task_id", "input"}, map[string]*jsonschema.Schema{
		"task_id": {Type: "string", MinLength: &one, Description: "The id of a background task started with input: true (e.g. bash-3)."},
		"input":   {Type: "string", Description: "The text to write, exactly; end a line with \\n to send it. May be empty (with eof, or to read what the task printed since)."},
		"eof":     {Type: "boolean", Description: "Close the task's input after this text (the program reads end of file)."},
		"wait_ms": {Type: "number", ExclusiveMinimum: &zero, Description: "Longest wait for the task's response, in milliseconds; default 2000, at most 30000."},
	})
}

type inputArgs struct {
	TaskID string   `json:"task_id"`
	Input  string   `json:"input"`
	EOF    bool     `json:"eof"`
	WaitMs *float64 `json:"wait_ms"`
}

func (t *Tools) input(ctx context.Context, call *tools.Call) (*tools.Result, error) {
	var a inputArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return nil, err
	}
	if len(a.Input) > MaxInputBytes {
		return nil, fmt.Errorf("invalid input: %d bytes, more than the %d one call may write", len(a.Input), MaxInputBytes)
	}
	id, err := t.ownedTask(ctx, call)
	if err != nil {
		return nil, err
	}
	in := bash.Input{Data: []byte(a.Input), EOF: a.EOF}
	if a.WaitMs != nil {
		in.Wait = min(msDuration(*a.WaitMs), maxInputWait)
	}
	r, err := t.exec.WriteInput(ctx, id, in)
	if err != nil {
		return nil, errors.New(inputErrorText(err))
	}
	t.seen(call, r.Task)
	return tools.TextResult(readText(r, t.maxChars)), nil
}

// firstPrompt is the result of a bash call that started task with its
// input open: the start, then what the program printed until it first
// waited for input (its banner and prompt), bounded by the start wait.
func (t *Tools) firstPrompt(ctx context.Context, call *tools.Call, task bash.Task) string {
	head := startText(task)
	r, err := t.exec.WriteInput(ctx, task.ID, bash.Input{Wait: t.startWait})
	if err != nil {
		// It ended already (its input with it), or the wait failed: what
		// it printed is read as bash_output reads it.
		if r, err = t.exec.ReadOutput(ctx, task.ID); err != nil {
			return head
		}
	}
	t.seen(call, r.Task)
	room := t.maxChars
	if room > 0 {
		room = max(room-chars(head)-1, 1)
	}
	return head + "\n" + readText(r, room)
}

// seen records what a result of the call shows of task: its end, or its
// state while it runs; a notice of either is then moot.
func (t *Tools) seen(call *tools.Call, task bash.Task) {
	if task.Done() {
		t.notices.seenEnd(call.Session.ID, task.ID)
	} else {
		t.notices.seenRunning(call.Session.ID, task.ID)
	}
}

// inputErrorText is what the model reads when a write to a task's input
// failed.
func inputErrorText(err error) string {
	var ie *bash.InputError
	if !errors.As(err, &ie) {
		return errorText(err)
	}
	switch {
	case errors.Is(err, bash.ErrNoInput):
		return fmt.Sprintf("task %s was not started with input; start a command with input: true to write to it", ie.ID)
	case errors.Is(err, bash.ErrTaskEnded):
		return fmt.Sprintf("task %s has ended; nothing reads its input (read its output with bash_output)", ie.ID)
	case errors.Is(err, bash.ErrInputClosed):
		return fmt.Sprintf("the input of task %s is closed (by an earlier eof, or by the program)", ie.ID)
	case errors.Is(err, bash.ErrInputBlocked):
		return fmt.Sprintf("task %s is not reading its input: %d bytes of it were written before the wait ran out; read its output with bash_output, or stop it with bash_kill", ie.ID, ie.Written)
	}
	return errorText(ie.Err)
}

// presentInputCall titles a bash_input call with the task, and shows the
// input written.
func presentInputCall(args json.RawMessage) tools.CallPresentation {
	var a struct {
		TaskID *string `json:"task_id"`
		Input  *string `json:"input"`
	}
	if json.Unmarshal(args, &a) != nil || a.TaskID == nil || a.Input == nil {
		return tools.GenericCall(InputName, args)
	}
	return tools.CallPresentation{Title: "Write to background task " + Visible(*a.TaskID), Kind: tools.KindExecute, RawInput: *a.Input}
}

// tasks lists the caller's own tasks.
func (t *Tools) tasks(ctx context.Context, call *tools.Call) (*tools.Result, error) {
	list, err := t.exec.List(ctx)
	if err != nil {
		return nil, errors.New(errorText(err))
	}
	var mine []bash.Task
	for _, task := range list {
		if task.Owner == call.Session.ID {
			mine = append(mine, task)
		}
	}
	return tools.TextResult(tasksText(mine, time.Now())), nil
}

// tasksText lists tasks, one per line: id, status, age, open input, and
// the command's first line.
func tasksText(list []bash.Task, now time.Time) string {
	if len(list) == 0 {
		return "(no background tasks)"
	}
	var b strings.Builder
	for i, task := range list {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(string(task.ID) + " " + statusLine(task))
		if !task.Started.IsZero() {
			b.WriteString(" started " + ago(now.Sub(task.Started)) + " ago")
		}
		switch {
		case task.Done():
		case task.Terminal:
			b.WriteString(", in a terminal")
		case task.Input:
			b.WriteString(", input open")
		}
		b.WriteString(": " + firstLine(task.Command))
	}
	return b.String()
}

// ago is a duration as the model reads it: 45s, 12m, 3h.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d/time.Second), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%dh", int(d/time.Hour))
}

// firstLine is a command's first line, with … where more follows, at most
// 200 characters.
func firstLine(cmd string) string {
	line, more := strings.TrimRight(cmd, "\n"), false
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line, more = line[:i], true
	}
	if r := []rune(line); len(r) > 200 {
		line, more = string(r[:200]), true
	}
	if more {
		line += " …"
	}
	return line
}
