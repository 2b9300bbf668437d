package toolbash

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/tools"
	"github.com/google/jsonschema-go/jsonschema"
)

// How editors draw the five tools. Every function here is pure and copes
// with arguments of any shape (they also run when a logged session is
// replayed): what they cannot read gets the generic presentation.

// presentBashCall draws a bash call: the command as the title (Visible:
// what a terminal would act on is escaped) and exactly as the raw input,
// kind execute, the description as a content block, and, for a
// foreground call, a request for a terminal in the call's workdir (as the
// model gave it; empty for the session cwd). Arguments the bash tool would
// refuse (not an object, a blank or missing command or description, a
// timeoutMs, workdir or run_in_background of the wrong type or value) get
// the generic presentation.
func presentBashCall(args json.RawMessage) tools.CallPresentation {
	a, ok := readBashArgs(args)
	if !ok {
		return tools.GenericCall(BashName, args)
	}
	p := tools.CallPresentation{Title: Visible(a.Command), Kind: tools.KindExecute, RawInput: a.Command,
		Content: []tools.Content{tools.Text(Visible(a.Description))}}
	if !a.inBackground() {
		p.Terminal = &tools.Terminal{}
		if a.Workdir != nil {
			p.Terminal.Cwd = *a.Workdir
		}
	}
	return p
}

// presentBashResult draws a bash result: a finished foreground run gets a
// terminal (the result text exactly, with its exit code or signal) and,
// for UIs without terminals, a fenced console block; a background start
// and an error result get the block alone, with no exit status. The result
// of a call with arguments the tool refuses gets the generic presentation
// (its content as it is), like the call.
func presentBashResult(args json.RawMessage, res *tools.Result) tools.ResultPresentation {
	a, ok := readBashArgs(args)
	if !ok {
		return tools.ResultPresentation{Content: res.Content}
	}
	text := res.Text()
	p := tools.ResultPresentation{Content: []tools.Content{tools.Text(tools.Fence("console", text))}}
	if a.inBackground() || res.IsError {
		return p
	}
	code, sig, ok := metaExit(res.Meta)
	if !ok {
		code, sig = parseExit(text)
	}
	p.Terminal = &tools.Terminal{Output: text, ExitCode: code, Signal: sig}
	return p
}

// bashArgsSchema is the bash tool's input schema, resolved once.
var bashArgsSchema = sync.OnceValue(func() *jsonschema.Resolved {
	rs, err := bashSchema(unsandboxedDescription).Resolve(nil) // with every argument the tool may have
	if err != nil {
		panic(err) // a fixed schema: tested
	}
	return rs
})

// readBashArgs reads bash arguments that the tool accepts: a JSON object
// valid against its schema (no unknown keys).
func readBashArgs(args json.RawMessage) (a bashArgs, ok bool) {
	var v map[string]any
	if json.Unmarshal(args, &v) != nil || v == nil || bashArgsSchema().Validate(v) != nil {
		return a, false
	}
	return a, json.Unmarshal(args, &a) == nil
}

// presentInputResult draws a bash_input or bash_tasks result as a fenced
// console block of the text the model reads.
func presentInputResult(_ json.RawMessage, res *tools.Result) tools.ResultPresentation {
	return tools.ResultPresentation{Content: []tools.Content{tools.Text(tools.Fence("console", res.Text()))}}
}

// presentTaskCall draws a bash_output or bash_kill call: a task-scoped
// title, kind execute, the task id as the raw input.
func presentTaskCall(name, title string) func(json.RawMessage) tools.CallPresentation {
	return func(args json.RawMessage) tools.CallPresentation {
		var a struct {
			TaskID *string `json:"task_id"`
		}
		if json.Unmarshal(args, &a) != nil || a.TaskID == nil {
			return tools.GenericCall(name, args)
		}
		return tools.CallPresentation{Title: title + Visible(*a.TaskID), Kind: tools.KindExecute, RawInput: *a.TaskID}
	}
}

// exitMeta records a run's exit status beside its text.
func exitMeta(r bash.RunResult) map[string]any {
	if r.Signal != "" {
		return map[string]any{"signal": r.Signal}
	}
	return map[string]any{"exitCode": r.ExitCode}
}

// metaExit reads exitMeta back, also after a JSON round trip.
func metaExit(m map[string]any) (code *int, sig string, ok bool) {
	if s, isStr := m["signal"].(string); isStr && s != "" {
		return nil, s, true
	}
	switch v := m["exitCode"].(type) {
	case int:
		return &v, "", true
	case float64:
		c := int(v)
		return &c, "", true
	}
	return nil, "", false
}

var (
	exitMarker   = regexp.MustCompile(`^\[exit code: (-?\d+)\]$`)
	signalMarker = regexp.MustCompile(`^\[killed by signal: ([A-Za-z0-9 +-]+)\]$`)
	trailMarker  = regexp.MustCompile(`^\[still running in background as task bash-\d+\]$|^` + regexp.QuoteMeta(leftoversKilled) + `$|^` + regexp.QuoteMeta(leftoversOutside) + `$`)
)

// parseExit reads the exit status from the markers that end a bash result
// text. Only a marker that is a whole final line after a newline counts, so
// output that merely ends with marker-like text reads as a clean exit 0.
func parseExit(text string) (code *int, signal string) {
	last := func(s string) (rest, line string, ok bool) {
		i := strings.LastIndexByte(s, '\n')
		if i < 0 {
			return s, "", false
		}
		return s[:i], s[i+1:], true
	}
	rest, l, ok := last(text)
	if ok && trailMarker.MatchString(l) {
		_, l, ok = last(rest)
	}
	zero := 0
	if !ok {
		return &zero, ""
	}
	if m := signalMarker.FindStringSubmatch(l); m != nil {
		return nil, m[1]
	}
	if m := exitMarker.FindStringSubmatch(l); m != nil {
		if c, err := strconv.Atoi(m[1]); err == nil && c != 0 {
			return &c, ""
		}
	}
	return &zero, ""
}
