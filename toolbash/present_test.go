package toolbash

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/tools"
)

func intp(i int) *int { return &i }

// bashCallCases are bash arguments and how their call is drawn: a card of
// its own when the tool accepts them, the generic card when it refuses
// them.
var bashCallCases = []struct {
	name string
	args string
	want tools.CallPresentation
}{
	{"input: a background task, no terminal", `{"command":"python3 -u -i -q","description":"Start Python","input":true}`,
		tools.CallPresentation{Title: "python3 -u -i -q", Kind: tools.KindExecute, RawInput: "python3 -u -i -q",
			Content: []tools.Content{tools.Text("Start Python")}}},
	{"tty: a background task, not the editor's terminal", `{"command":"git add -p","description":"Stage hunks","tty":true}`,
		tools.CallPresentation{Title: "git add -p", Kind: tools.KindExecute, RawInput: "git add -p",
			Content: []tools.Content{tools.Text("Stage hunks")}}},
	{"foreground", `{"command":"ls -la src","description":"List the source files"}`,
		tools.CallPresentation{Title: "ls -la src", Kind: tools.KindExecute, RawInput: "ls -la src",
			Content: []tools.Content{tools.Text("List the source files")}, Terminal: &tools.Terminal{}}},
	{"absolute workdir", `{"command":"make","description":"Build","workdir":"/src/app"}`,
		tools.CallPresentation{Title: "make", Kind: tools.KindExecute, RawInput: "make",
			Content: []tools.Content{tools.Text("Build")}, Terminal: &tools.Terminal{Cwd: "/src/app"}}},
	{"relative workdir as given", `{"command":"make","description":"Build","workdir":"app"}`,
		tools.CallPresentation{Title: "make", Kind: tools.KindExecute, RawInput: "make",
			Content: []tools.Content{tools.Text("Build")}, Terminal: &tools.Terminal{Cwd: "app"}}},
	{"background is not a terminal", `{"command":"npm run dev","description":"Start the dev server","run_in_background":true}`,
		tools.CallPresentation{Title: "npm run dev", Kind: tools.KindExecute, RawInput: "npm run dev",
			Content: []tools.Content{tools.Text("Start the dev server")}}},
	{"every argument", `{"command":"make","description":"Build","timeoutMs":1500.5,"workdir":"","run_in_background":false}`,
		tools.CallPresentation{Title: "make", Kind: tools.KindExecute, RawInput: "make",
			Content: []tools.Content{tools.Text("Build")}, Terminal: &tools.Terminal{}}},
	{"an unknown argument", `{"command":"make","description":"Build","color":"red"}`,
		tools.GenericCall(BashName, json.RawMessage(`{"command":"make","description":"Build","color":"red"}`))},
	// Go's decoding would run the second spelling; the card would show
	// the first.
	{"an argument spelt twice", `{"command":"echo SHOWN","description":"x","Command":"echo RAN"}`,
		tools.GenericCall(BashName, json.RawMessage(`{"command":"echo SHOWN","description":"x","Command":"echo RAN"}`))},
	// What a terminal would act on is escaped in the title; the raw input
	// is the command exactly.
	{"control characters", `{"command":"touch /x #\u001b[2K\r\u001b[1Aecho hello\u202e","description":"Say \u001b[8mhello"}`,
		tools.CallPresentation{Title: `touch /x #\x1b[2K\r\x1b[1Aecho hello\u202e`, Kind: tools.KindExecute,
			RawInput: "touch /x #\x1b[2K\r\x1b[1Aecho hello\u202e",
			Content:  []tools.Content{tools.Text(`Say \x1b[8mhello`)}, Terminal: &tools.Terminal{}}},
	{"command not a string", `{"command":5,"description":"d"}`,
		tools.CallPresentation{Title: "bash", Kind: tools.KindOther, RawInput: map[string]any{"command": 5.0, "description": "d"}}},
	{"not an object", `[1,2]`,
		tools.CallPresentation{Title: "bash", Kind: tools.KindOther, RawInput: []any{1.0, 2.0}}},
	{"not JSON", `{"command":`,
		tools.CallPresentation{Title: "bash", Kind: tools.KindOther, RawInput: `{"command":`}},
	{"empty", ``,
		tools.CallPresentation{Title: "bash", Kind: tools.KindOther, RawInput: ""}},
	{"null", `null`, tools.GenericCall(BashName, json.RawMessage(`null`))},
	{"no description", `{"command":"true"}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true"}`))},
	{"blank description", `{"command":"true","description":" \t"}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":" \t"}`))},
	{"description not a string", `{"command":"true","description":7}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":7}`))},
	{"no command", `{"description":"d"}`, tools.GenericCall(BashName, json.RawMessage(`{"description":"d"}`))},
	{"blank command", `{"command":"  \n","description":"d"}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"  \n","description":"d"}`))},
	{"timeoutMs a string", `{"command":"true","description":"d","timeoutMs":"5000"}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":"d","timeoutMs":"5000"}`))},
	{"timeoutMs negative", `{"command":"true","description":"d","timeoutMs":-5}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":"d","timeoutMs":-5}`))},
	{"timeoutMs zero", `{"command":"true","description":"d","timeoutMs":0}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":"d","timeoutMs":0}`))},
	{"timeoutMs past float64", `{"command":"true","description":"d","timeoutMs":1e400}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":"d","timeoutMs":1e400}`))},
	{"workdir not a string", `{"command":"true","description":"d","workdir":[1]}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":"d","workdir":[1]}`))},
	{"workdir null", `{"command":"true","description":"d","workdir":null}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":"d","workdir":null}`))},
	{"run_in_background not a boolean", `{"command":"true","description":"d","run_in_background":"no"}`, tools.GenericCall(BashName, json.RawMessage(`{"command":"true","description":"d","run_in_background":"no"}`))},
}

func TestPresentBashCall(t *testing.T) {
	for _, tc := range bashCallCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := presentBashCall(json.RawMessage(tc.args)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// TestPresentBashCallAgreesWithTheTool: the arguments drawn with the
// generic card are exactly those the registry refuses for the bash tool.
func TestPresentBashCallAgreesWithTheTool(t *testing.T) {
	reg := &tools.Registry{}
	if err := (&Tools{}).Register(reg); err != nil {
		t.Fatal(err)
	}
	const accepted = "arguments accepted"
	reg.Use(func(tools.Handler) tools.Handler { // in place of the run
		return func(context.Context, *tools.Call) *tools.Result { return tools.TextResult(accepted) }
	})
	for _, tc := range bashCallCases {
		res := reg.Execute(context.Background(), &tools.Call{Tool: BashName, Args: json.RawMessage(tc.args)})
		if refused, generic := res.Text() != accepted, tc.want.Kind == tools.KindOther; refused != generic {
			t.Errorf("%s: the registry says %q; the card is generic: %v", tc.name, res.Text(), generic)
		}
	}
}

func TestPresentTaskCalls(t *testing.T) {
	tb := (&Tools{}).List()
	tests := []struct {
		tool *tools.Tool
		args string
		want tools.CallPresentation
	}{
		{tb[1], `{"task_id":"bash-3"}`, tools.CallPresentation{Title: "Read output from background task bash-3", Kind: tools.KindExecute, RawInput: "bash-3"}},
		{tb[2], `{"task_id":"bash-3"}`, tools.CallPresentation{Title: "Kill background task bash-3", Kind: tools.KindExecute, RawInput: "bash-3"}},
		{tb[1], `{"task_id":3}`, tools.CallPresentation{Title: "bash_output", Kind: tools.KindOther, RawInput: map[string]any{"task_id": 3.0}}},
		{tb[2], `nope`, tools.CallPresentation{Title: "bash_kill", Kind: tools.KindOther, RawInput: "nope"}},
		{tb[3], `{"task_id":"bash-3","input":"print(1)\n"}`, tools.CallPresentation{Title: "Write to background task bash-3", Kind: tools.KindExecute, RawInput: "print(1)\n"}},
		{tb[3], `{"task_id":"bash-3"}`, tools.CallPresentation{Title: "bash_input", Kind: tools.KindOther, RawInput: map[string]any{"task_id": "bash-3"}}},
		{tb[4], `{}`, tools.CallPresentation{Title: "List background tasks", Kind: tools.KindExecute}},
	}
	for _, tc := range tests {
		if got := tc.tool.PresentCall(json.RawMessage(tc.args)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: got %#v", tc.tool.Name, tc.args, got)
		}
	}
}

// TestPresentResultRoundTrip: the exit status a result card shows is the
// one the run had, for every marker combination runText makes, both from
// the live result's metadata and parsed back from the text alone (replay).
func TestPresentResultRoundTrip(t *testing.T) {
	fg := json.RawMessage(`{"command":"x","description":"d"}`)
	runs := []bash.RunResult{
		{Stdout: out("ok\n")},
		{},
		{Stderr: out("e\n"), ExitCode: 1},
		{Stdout: out("x"), ExitCode: 2},
		{ExitCode: 255},
		{Stdout: out("start\n"), TimedOut: true, Timeout: time.Second, ExitCode: -1, Signal: "SIGTERM"},
		{TimedOut: true, Timeout: time.Second, ExitCode: -1, Signal: "SIGKILL"},
		{Stdout: out("bye\n"), TimedOut: true, Timeout: time.Second},
		{Stdout: out("bye"), TimedOut: true, Timeout: time.Second, ExitCode: 3},
		{ExitCode: -1, Signal: "SIGSEGV"},
		{Stdout: bash.Output{Text: "t", Truncated: true}, ExitCode: 4},
		{Stdout: bash.Output{Text: "t\n", Truncated: true, SpillPath: "/tmp/s.log"}, Stderr: bash.Output{Text: "e", Truncated: true}},
		{Stdout: out("hi\n"), Adopted: "bash-2"},
		{Stdout: out("hi"), ExitCode: 6, Adopted: "bash-2"},
		{Stdout: out("hi"), ExitCode: -1, Signal: "SIGTERM", Adopted: "bash-2"},
		{Stdout: out("hi\n"), ExitCode: 5, LeftoversKilled: true},
		{Stdout: out("hi\n"), ExitCode: 6, LeftoversKilled: true, LeftoversOutside: true},
	}
	for i, r := range runs {
		var wantCode *int
		if r.Signal == "" {
			wantCode = intp(r.ExitCode)
		}
		text := runText(r, 0)
		live := tools.TextResult(text)
		live.Meta = exitMeta(r)
		replayed := tools.TextResult(text)
		for name, res := range map[string]*tools.Result{"live": live, "replayed": replayed} {
			p := presentBashResult(fg, res)
			if p.Terminal == nil {
				t.Fatalf("%d %s: no terminal", i, name)
			}
			if p.Terminal.Output != text || !reflect.DeepEqual(p.Terminal.ExitCode, wantCode) || p.Terminal.Signal != r.Signal {
				t.Errorf("%d %s: terminal %q exit %v signal %q; want exit %v signal %q", i, name, p.Terminal.Output, deref(p.Terminal.ExitCode), p.Terminal.Signal, deref(wantCode), r.Signal)
			}
			if want := []tools.Content{tools.Text(tools.Fence("console", text))}; !reflect.DeepEqual(p.Content, want) {
				t.Errorf("%d %s: content %#v", i, name, p.Content)
			}
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestParseExitMarkerLikeOutput(t *testing.T) {
	tests := []struct {
		text   string
		code   *int
		signal string
	}{
		{"[exit code: 5]\n", intp(0), ""},                  // clean output ending in a marker-like line and a newline
		{"foo [exit code: 5]", intp(0), ""},                // not a line of its own
		{"[exit code: 5]", intp(0), ""},                    // not after a newline
		{"[killed by signal: SIGTERM]", intp(0), ""},       // same
		{"x\n [exit code: 5]", intp(0), ""},                // not the whole line
		{"x\n[exit code: 5] ", intp(0), ""},                // trailing space
		{"x\n[exit code: 5]\n\n", intp(0), ""},             // not the final line
		{"x\n[exit code: 12]", intp(12), ""},               // a real marker
		{"x\n[killed by signal: SIGKILL]", nil, "SIGKILL"}, // a real marker
		{"(no output)\n[timed out after 5ms]", intp(0), ""},
	}
	for _, tc := range tests {
		code, sig := parseExit(tc.text)
		if !reflect.DeepEqual(code, tc.code) || sig != tc.signal {
			t.Errorf("parseExit(%q) = %v, %q; want %v, %q", tc.text, deref(code), sig, deref(tc.code), tc.signal)
		}
	}
}

func TestPresentResultWithoutExit(t *testing.T) {
	tests := []struct {
		name string
		args string
		res  *tools.Result
	}{
		{"background start", `{"command":"x","description":"d","run_in_background":true}`, tools.TextResult("started background task bash-1")},
		{"start with input", `{"command":"x","description":"d","input":true}`,
			tools.TextResult("started background task bash-1; its input is open: write to it with bash_input")},
		{"start in a terminal", `{"command":"x","description":"d","tty":true}`,
			tools.TextResult("started background task bash-1 in a terminal; write to it with bash_input")},
		{"error result", `{"command":"x","description":"d"}`, tools.ErrorResult("command aborted")},
		{"error with marker-like text", `{"command":"x","description":"d"}`, tools.ErrorResult("x\n[exit code: 3]")},
	}
	for _, tc := range tests {
		p := presentBashResult(json.RawMessage(tc.args), tc.res)
		want := tools.ResultPresentation{Content: []tools.Content{tools.Text(tools.Fence("console", tc.res.Text()))}}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("%s: %#v", tc.name, p)
		}
	}
}

// TestPresentResultOfMalformedCall: the result of a call the tool refused
// is drawn like its call, generically: its content as it is.
func TestPresentResultOfMalformedCall(t *testing.T) {
	for _, args := range []string{`[1]`, `{"command":"true"}`, `{"command":"true","description":"d","timeoutMs":"5"}`} {
		res := tools.ErrorResult("invalid arguments")
		if p, want := presentBashResult(json.RawMessage(args), res), (tools.ResultPresentation{Content: res.Content}); !reflect.DeepEqual(p, want) {
			t.Errorf("%s: %#v", args, p)
		}
	}
}

// TestMetaAfterJSONRoundTrip: a result's exit metadata reads back both as
// the tool made it and after the whole result went through JSON (numbers
// come back as float64), and the card takes the exit status from it, not
// from the text, when there is one.
func TestMetaAfterJSONRoundTrip(t *testing.T) {
	fg := json.RawMessage(`{"command":"x","description":"d"}`)
	for _, r := range []bash.RunResult{{}, {ExitCode: 3}, {ExitCode: 255}, {ExitCode: -1, Signal: "SIGTERM"}} {
		var wantCode *int
		if r.Signal == "" {
			wantCode = intp(r.ExitCode)
		}
		live := tools.TextResult("text without markers")
		live.Meta = exitMeta(r)
		b, err := json.Marshal(live)
		if err != nil {
			t.Fatal(err)
		}
		var back tools.Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		for name, res := range map[string]*tools.Result{"live": live, "after JSON": &back} {
			code, sig, ok := metaExit(res.Meta)
			if !ok || !reflect.DeepEqual(code, wantCode) || sig != r.Signal {
				t.Errorf("%+v %s: metaExit(%v) = %v, %q, %v", r, name, res.Meta, deref(code), sig, ok)
			}
			p := presentBashResult(fg, res)
			if p.Terminal == nil || !reflect.DeepEqual(p.Terminal.ExitCode, wantCode) || p.Terminal.Signal != r.Signal {
				t.Errorf("%+v %s: terminal %#v", r, name, p.Terminal)
			}
		}
	}
}
