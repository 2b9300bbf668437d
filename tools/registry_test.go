package tools

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func echoTool(name string, exec func(context.Context, *Call) (*Result, error)) *Tool {
	one := 1
	if exec == nil {
		exec = func(_ context.Context, c *Call) (*Result, error) {
			var a struct{ Msg string }
			json.Unmarshal(c.Args, &a)
			return TextResult(a.Msg), nil
		}
	}
	return &Tool{
		Name: name,
		InputSchema: &jsonschema.Schema{Type: "object", Required: []string{"msg"},
			Properties: map[string]*jsonschema.Schema{"msg": {Type: "string", MinLength: &one}, "n": {Type: "integer", Minimum: new(float64)}}},
		Execute: exec,
	}
}

func exec(r *Registry, tool, args string) *Result {
	return r.Execute(context.Background(), &Call{Tool: tool, Args: json.RawMessage(args)})
}

func TestPipeline(t *testing.T) {
	var r Registry
	boom := echoTool("boom", func(context.Context, *Call) (*Result, error) { panic("kaboom") })
	fails := echoTool("fails", func(context.Context, *Call) (*Result, error) { return nil, errors.New("the disk is full") })
	empty := echoTool("empty", func(context.Context, *Call) (*Result, error) { return nil, nil })
	echo := echoTool("echo", nil)
	echo.Withheld = map[string]string{"withheld": "withheld here: the server turned it off"}
	pair := echoTool("pair", nil)
	pair.Validate = func(args json.RawMessage) error {
		if strings.Contains(string(args), `"n"`) {
			return errors.New("msg and n exclude each other")
		}
		return nil
	}
	none := &Tool{Name: "nope2", InputSchema: &jsonschema.Schema{Type: "object"}, Execute: echo.Execute}
	if err := r.Register(echo, pair, none, boom, fails, empty); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, args, want string
		isErr            bool
	}{
		{"echo", `{"msg":"hi"}`, "hi", false},
		{"echo", `{"msg":"hi","unknown":true}`, "invalid arguments: unknown argument unknown (echo takes msg, n)", true},
		// Exactly as sent: Go's decoding would take Msg (and the last of
		// two) for msg, and a client's approval reads the other.
		{"echo", `{"msg":"shown","Msg":"ran"}`, "invalid arguments: unknown argument Msg (argument names are exact: did you mean msg?)", true},
		{"echo", `{"MSG":"ran"}`, "invalid arguments: unknown argument MSG (argument names are exact: did you mean msg?)", true},
		{"echo", `{"msg":"x","\u212a":1}`, `invalid arguments: unknown argument "\u212a" (echo takes msg, n)`, true},
		{"echo", `{"m\u017fg":"ran"}`, `invalid arguments: unknown argument "m\u017fg" (argument names are exact: did you mean msg?)`, true},
		{"echo", `{"msg":"shown","msg":"ran"}`, "invalid arguments: argument msg is given twice", true},
		{"echo", `{"msg":"shown","m\u0073g":"ran"}`, "invalid arguments: argument msg is given twice", true},
		{"echo", `{"msg":"x"} {"msg":"y"}`, `invalid arguments: expected a JSON object, got {"msg":"x"} {"msg":"y"}`, true},
		{"echo", `{"msg":"x",}`, `invalid arguments: expected a JSON object, got {"msg":"x",}`, true},
		{"echo", `["msg"]`, `invalid arguments: expected a JSON object, got ["msg"]`, true},
		{"echo", `{"msg":"hi","n":2}`, "hi", false},
		{"echo", `{"msg":"hi","withheld":true}`, "withheld here: the server turned it off", true},
		{"pair", `{"msg":"x","n":1}`, "msg and n exclude each other", true},
		{"nope2", `{"Anything":1}`, "invalid arguments: unknown argument Anything (nope2 takes none)", true},
		{"echo", `{}`, "missing required argument msg", true},
		{"echo", `{"msg":""}`, `invalid msg: expected a non-empty string, got ""`, true},
		{"echo", `{"msg":"x","n":-1}`, "invalid n: expected a whole number of at least 0, got -1", true},
		{"echo", `{"msg":"x","n":1.5}`, "invalid n: expected a whole number of at least 0, got 1.5", true},
		{"echo", `{"msg":"` + strings.Repeat("y", 10) + `","n":"` + strings.Repeat("z", 80) + `"}`, `invalid n: expected a whole number of at least 0, got "` + strings.Repeat("z", 56) + "...", true},
		{"boom", `{"msg":"x"}`, "tool boom failed: internal error: kaboom", true},
		{"fails", `{"msg":"x"}`, "the disk is full", true},
		{"empty", `{"msg":"x"}`, "tool empty returned no result", true},
		{"nope", `{}`, `unknown tool "nope"`, true},
	}
	for _, tc := range tests {
		res := exec(&r, tc.tool, tc.args)
		if res.Text() != tc.want || res.IsError != tc.isErr {
			t.Errorf("%s %s: %q (isError %v); want %q", tc.tool, tc.args, res.Text(), res.IsError, tc.want)
		}
	}
}

func TestMiddleware(t *testing.T) {
	var r Registry
	r.Register(echoTool("echo", nil))
	var order []string
	trace := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, c *Call) *Result {
				order = append(order, name+" in")
				res := next(ctx, c)
				order = append(order, name+" out")
				return res
			}
		}
	}
	veto := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) *Result {
			if strings.Contains(string(c.Args), "rm -rf") {
				return ErrorResult("the user declined to run this command")
			}
			return next(ctx, c)
		}
	}
	rewrite := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) *Result {
			c2 := *c
			c2.Args = json.RawMessage(strings.ReplaceAll(string(c.Args), "secret", "[redacted]"))
			return next(ctx, &c2)
		}
	}
	panicky := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) *Result {
			if strings.Contains(string(c.Args), "panic") {
				panic("middleware bug")
			}
			return next(ctx, c)
		}
	}
	r.Use(trace("outer"), veto, rewrite, panicky, trace("inner"))
	if res := exec(&r, "echo", `{"msg":"a secret"}`); res.Text() != "a [redacted]" || res.IsError {
		t.Errorf("rewrite: %q", res.Text())
	}
	if want := []string{"outer in", "inner in", "inner out", "outer out"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v; want %v", order, want)
	}
	if res := exec(&r, "echo", `{"msg":"rm -rf /"}`); res.Text() != "the user declined to run this command" || !res.IsError {
		t.Errorf("veto: %q", res.Text())
	}
	if res := exec(&r, "echo", `{"msg":"panic"}`); res.Text() != "tool echo failed: internal error: middleware bug" || !res.IsError {
		t.Errorf("panicking middleware: %q", res.Text())
	}
	// Validation runs before any middleware.
	order = nil
	if res := exec(&r, "echo", `{}`); !res.IsError || len(order) != 0 {
		t.Errorf("invalid call reached middleware: %v", order)
	}
}

func TestRegisterErrors(t *testing.T) {
	var r Registry
	if err := r.Register(echoTool("echo", nil)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool *Tool
		want string
	}{
		{echoTool("echo", nil), "register tool echo: a tool of that name is registered already"},
		{&Tool{Name: "x"}, "register a tool: it needs a name and an Execute function"},
		{&Tool{Name: "arr", InputSchema: &jsonschema.Schema{Type: "array"}, Execute: echoTool("", nil).Execute}, "register tool arr: the input schema must be of type object"},
	}
	for _, tc := range tests {
		if err := r.Register(tc.tool); err == nil || err.Error() != tc.want {
			t.Errorf("Register(%s) = %v; want %q", tc.tool.Name, err, tc.want)
		}
	}
	if n := len(r.Tools()); n != 1 {
		t.Errorf("%d tools registered", n)
	}
}

func TestPresentationFallback(t *testing.T) {
	var r Registry
	plain := echoTool("plain", nil)
	broken := echoTool("broken", nil)
	broken.PresentCall = func(json.RawMessage) CallPresentation { panic("bad presenter") }
	broken.PresentResult = func(json.RawMessage, *Result) ResultPresentation { panic("bad presenter") }
	r.Register(plain, broken)
	args := json.RawMessage(`{"msg":"hi"}`)
	want := CallPresentation{Title: "plain", Kind: KindOther, RawInput: map[string]any{"msg": "hi"}}
	if got := r.PresentCall("plain", args); !reflect.DeepEqual(got, want) {
		t.Errorf("generic: %#v", got)
	}
	want.Title = "broken"
	if got := r.PresentCall("broken", args); !reflect.DeepEqual(got, want) {
		t.Errorf("panicking presenter: %#v", got)
	}
	if got := r.PresentCall("unknown", json.RawMessage(`{oops`)); got.Title != "unknown" || got.RawInput != "{oops" {
		t.Errorf("unknown tool: %#v", got)
	}
	res := TextResult("out")
	for _, name := range []string{"plain", "broken", "unknown"} {
		if got := r.PresentResult(name, args, res); !reflect.DeepEqual(got, ResultPresentation{Content: res.Content}) {
			t.Errorf("%s result: %#v", name, got)
		}
	}
}

func TestFence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ls\nfile\n\n\n", "```console\nls\nfile\n```"},
		{"a ``` b", "````console\na ``` b\n````"},
		{"", "```console\n\n```"},
	}
	for _, tc := range tests {
		if got := Fence("console", tc.in); got != tc.want {
			t.Errorf("Fence(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestStarted: a call's Started runs once the middleware let it through,
// after every middleware's way in and before the tool; a call that a
// middleware answers never starts.
func TestStarted(t *testing.T) {
	var r Registry
	r.Register(echoTool("echo", nil))
	var order []string
	r.Use(func(next Handler) Handler {
		return func(ctx context.Context, c *Call) *Result {
			order = append(order, "gate")
			if strings.Contains(string(c.Args), "no") {
				return ErrorResult("declined")
			}
			return next(ctx, c)
		}
	})
	for _, msg := range []string{"yes", "no"} {
		order = nil
		call := &Call{Tool: "echo", Args: json.RawMessage(`{"msg":"` + msg + `"}`), Started: func() { order = append(order, "started") }}
		r.Execute(context.Background(), call)
		want := []string{"gate", "started"}
		if msg == "no" {
			want = want[:1]
		}
		if !reflect.DeepEqual(order, want) {
			t.Errorf("%s: %v; want %v", msg, order, want)
		}
	}
}
