package tools

import (
	"encoding/json"
	"strings"
)

// Kind is the kind of a tool call, as ACP names them: a UI picks an icon or
// a treatment by it.
type Kind string

// The kinds of tool call.
const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindThink   Kind = "think"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// CallPresentation is how a UI draws a tool call before it has a result.
type CallPresentation struct {
	// Title is the call's one-line heading.
	Title string
	Kind  Kind
	// RawInput is what a UI shows as the call's input (any JSON value).
	RawInput any
	// Content is shown with the call (for bash: the description).
	Content []Content
	// Terminal, when set, asks a capable UI to draw the call as a terminal.
	Terminal *Terminal
}

// ResultPresentation is how a UI draws a call's result.
type ResultPresentation struct {
	// Content is for UIs without terminals (for bash: a fenced console block).
	Content []Content
	// Terminal, when set, carries what a terminal card shows: the output
	// and the exit status.
	Terminal *Terminal
}

// Terminal is the neutral description of a terminal card.
type Terminal struct {
	// Cwd is the working directory of a call's terminal: absolute as is, or
	// relative for the front end to resolve against the session cwd; empty
	// means the session cwd.
	Cwd string
	// Output is the text the terminal shows, for a result.
	Output string
	// ExitCode is the exit status of a result, nil when there is none (a
	// signal death, or no process exit at all).
	ExitCode *int
	// Signal names the signal that ended the command, if one did.
	Signal string
}

// PresentCall returns how to draw a call of the named tool: the tool's own
// PresentCall, or the generic presentation (title = tool name, kind other,
// rawInput = the arguments) for a tool without one, an unknown tool, or a
// presenter that panics.
func (r *Registry) PresentCall(name string, args json.RawMessage) (p CallPresentation) {
	t := r.Tool(name)
	if t == nil || t.PresentCall == nil {
		return GenericCall(name, args)
	}
	defer func() {
		if recover() != nil {
			p = GenericCall(name, args)
		}
	}()
	return t.PresentCall(args)
}

// GenericCall is the presentation of a call that has none of its own:
// title the tool name, kind other, raw input the arguments (as text when
// they are not JSON). A tool's presenter returns it for arguments it cannot
// read.
func GenericCall(name string, args json.RawMessage) CallPresentation {
	return CallPresentation{Title: name, Kind: KindOther, RawInput: rawArgs(args)}
}

// PresentResult returns how to draw a result of the named tool: the tool's
// own PresentResult, or the generic one (the result's content as it is).
func (r *Registry) PresentResult(name string, args json.RawMessage, res *Result) (p ResultPresentation) {
	generic := ResultPresentation{Content: res.Content}
	t := r.Tool(name)
	if t == nil || t.PresentResult == nil {
		return generic
	}
	defer func() {
		if recover() != nil {
			p = generic
		}
	}()
	return t.PresentResult(args, res)
}

// rawArgs decodes arguments for display; invalid JSON is shown as text.
func rawArgs(args json.RawMessage) any {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return string(args)
	}
	return v
}

// Fence wraps text in a fenced code block of the given language, with a
// fence longer than any run of backticks in the text, and trailing blank
// lines trimmed.
func Fence(lang, text string) string {
	text = strings.TrimRight(text, "\n")
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + text + "\n" + fence
}
