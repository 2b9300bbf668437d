// Package tools is the tool registry that front ends drive: tool
// definitions with JSON Schemas for a model, an execute pipeline (argument
// validation, then middleware, then the tool) that never crashes its caller,
// and the presentation types with which a tool tells a UI how to draw its
// calls.
//
// A front end (MCP, ACP, a CLI) lists Definitions for the model, passes each
// model call to Execute, and asks PresentCall and PresentResult how to show
// it, without ever special-casing a tool's name.
package tools

import (
	"context"
	"encoding/json"

	"github.com/dshgo/dsh/session"
	"github.com/google/jsonschema-go/jsonschema"
)

// Tool is one tool a model can call.
type Tool struct {
	// Name is what the model calls, e.g. "bash".
	Name string
	// Description tells the model what the tool does and how to use it.
	Description string
	// InputSchema describes the arguments: an object schema whose properties
	// are validated one by one before Execute runs. Arguments are read
	// exactly: a key that is not a property, spelt exactly, or a key given
	// twice makes the call invalid, whatever the schema's
	// additionalProperties says (say false, so that clients know).
	InputSchema *jsonschema.Schema
	// Withheld are arguments the tool takes in other configurations and
	// not in this one, with the text a call that sets one reads (its
	// error), in place of the generic unknown-argument error.
	Withheld map[string]string
	// Validate, if set, checks the arguments beyond what the schema says
	// (arguments that exclude each other), after the schema and before any
	// middleware: a call it refuses reaches no middleware and asks nobody.
	Validate func(args json.RawMessage) error
	// Annotations are hints for clients (MCP tool annotations).
	Annotations Annotations
	// AskPermission says a front end that asks its user before running
	// tools should ask before running this one.
	AskPermission bool
	// Execute runs a validated call. A returned error becomes an error
	// result with the error's text; so does a panic.
	Execute func(ctx context.Context, call *Call) (*Result, error)
	// PresentCall, if set, says how a UI draws the call. It must be a pure
	// function of the arguments (it also runs when a session is replayed)
	// and must cope with arguments of any shape. Nil: the generic
	// presentation.
	PresentCall func(args json.RawMessage) CallPresentation
	// PresentResult, if set, says how a UI draws the call's result; pure,
	// like PresentCall. Nil: the generic presentation.
	PresentResult func(args json.RawMessage, res *Result) ResultPresentation
}

// Annotations are behaviour hints for clients. Nil pointers mean "not said".
type Annotations struct {
	ReadOnly    bool  `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  bool  `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

// Call is one call of a tool.
type Call struct {
	// ID is the front end's call id (a model's tool_call id), may be empty.
	ID string
	// Tool is the tool's name.
	Tool string
	// Args is the JSON object of arguments the model sent.
	Args json.RawMessage
	// Session is the caller.
	Session session.Session
	// Output, if set, receives the call's output as it is produced (for a
	// terminal that shows it live). Tools that cannot stream ignore it; the
	// result is always the whole answer. Calls are never concurrent. text
	// is valid UTF-8 and only valid during the call: copy what you keep.
	Output func(text []byte)
	// Started, if set, is called once every middleware has let the call
	// through (a permission gate that asked the user, say), just before
	// the tool runs; a call a middleware answered itself never calls it.
	Started func()
}

// Content is one block of a result or presentation. Only text blocks exist
// so far.
type Content struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

// Text is a text content block.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// Result is what a tool call returns to the model.
type Result struct {
	Content []Content
	// IsError marks a result the model should read as the call failing
	// (bad arguments, infrastructure failures), not as the tool's output.
	IsError bool
	// Meta carries structured facts beside the text for front ends and
	// presentation (for bash: the exit status). The model never sees it.
	Meta map[string]any
	// Err, if set, is why the call did not run, for the front end to act
	// on: the error of a front end's asker that gave no answer (see
	// toolbash.Asker). The model reads the text, never Err.
	Err error
}

// TextResult is a result holding one text block.
func TextResult(s string) *Result { return &Result{Content: []Content{Text(s)}} }

// ErrorResult is an error result holding one text block.
func ErrorResult(s string) *Result { return &Result{Content: []Content{Text(s)}, IsError: true} }

// Text joins the result's text blocks.
func (r *Result) Text() string {
	var s string
	for i, c := range r.Content {
		if i > 0 {
			s += "\n"
		}
		s += c.Text
	}
	return s
}

// Handler runs a call to completion and always returns a result.
type Handler func(ctx context.Context, call *Call) *Result

// Middleware wraps a handler: it may pass the call on (possibly rewritten),
// or veto it by returning a result of its own.
type Middleware func(next Handler) Handler
