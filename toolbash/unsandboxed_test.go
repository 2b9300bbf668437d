//go:build linux

package toolbash

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/tools"
)

// recording is a local executor that records whether each run was
// marked Unsandboxed.
type recording struct {
	*local.Executor
	marks []bool
}

func (r *recording) Run(ctx context.Context, spec bash.ExecSpec) (bash.RunResult, error) {
	r.marks = append(r.marks, spec.Unsandboxed)
	return r.Executor.Run(ctx, spec)
}

// TestUnsandboxedAsksEachTime: a call asking to run outside the sandbox
// is asked about every time, through its own question, even where a rule
// allows the command and the user said "always" to it before; only
// AllowOnce marks it; a client that cannot ask refuses it; the argument
// is in the schema only where it can be asked.
func TestUnsandboxedAsksEachTime(t *testing.T) {
	le := newLocal(t)
	exec := &recording{Executor: le}
	var asked []Question
	answer, askErr := AllowOnce, error(nil)
	tb := New(exec, &Options{AskUnsandboxed: func(_ context.Context, q Question) (Answer, error) {
		asked = append(asked, q)
		return answer, askErr
	}})
	t.Cleanup(tb.Close)
	allow, _ := permission.NewRules(permission.Allow, "test", "echo")
	g := NewGate(&GateOptions{Policy: &permission.Policy{Unmatched: permission.Ask, Rules: allow}})
	var reg tools.Registry
	reg.Use(g.Middleware)
	if err := tb.Register(&reg); err != nil {
		t.Fatal(err)
	}
	call := func(unsandboxed bool) *tools.Result {
		args, _ := json.Marshal(map[string]any{"command": "echo hi", "description": "say hi", "unsandboxed": unsandboxed})
		return execute(t, &reg, &tools.Call{Tool: BashName, Args: args, Session: session.Session{ID: "s", Cwd: t.TempDir()}})
	}
	for range 2 {
		if res := call(true); res.IsError || res.Text() != "hi\n" {
			t.Fatalf("allowed once: %q", res.Text())
		}
	}
	if len(asked) != 2 || !asked[0].Unsandboxed || asked[0].Command != "echo hi" {
		t.Errorf("asked %+v, want the same question twice", asked)
	}
	for _, tc := range []struct {
		answer Answer
		err    error
		want   string
	}{
		{AllowPrefixes, nil, UnsandboxedDeclinedText},
		{Reject, nil, UnsandboxedDeclinedText},
		{AllowOnce, ErrCannotAsk, "this client cannot ask the user"},
	} {
		answer, askErr = tc.answer, tc.err
		if res := call(true); !res.IsError || !strings.Contains(res.Text(), tc.want) {
			t.Errorf("answer %v, error %v: %q", tc.answer, tc.err, res.Text())
		}
	}
	if res := call(false); res.IsError {
		t.Errorf("a sandboxed call: %q", res.Text())
	}
	if want := []bool{true, true, false}; !slices.Equal(exec.marks, want) {
		t.Errorf("runs marked %v, want %v", exec.marks, want)
	}
	if _, ok := tb.List()[0].InputSchema.Properties["unsandboxed"]; !ok {
		t.Error("the argument is not in the schema")
	}
	if _, ok := (&Tools{}).List()[0].InputSchema.Properties["unsandboxed"]; ok {
		t.Error("the argument is in the schema of tools that cannot ask")
	}
}

// TestUnsandboxedIsOneCall: one yes is one call. A call that would keep a
// program reading input outside the sandbox (input or tty) is refused
// before anyone is asked, whatever the gate would ask; a background
// command's question says it runs on; the argument where it is not offered
// says why, and nothing runs.
func TestUnsandboxedIsOneCall(t *testing.T) {
	var asked []Question
	ask := func(_ context.Context, q Question) (Answer, error) {
		asked = append(asked, q)
		return AllowOnce, nil
	}
	mk := func(o *Options) *tools.Registry {
		tb := New(newLocal(t), o)
		t.Cleanup(tb.Close)
		g := NewGate(&GateOptions{Policy: &permission.Policy{Unmatched: permission.Ask}, Ask: ask})
		var reg tools.Registry
		reg.Use(g.Middleware)
		if err := tb.Register(&reg); err != nil {
			t.Fatal(err)
		}
		return &reg
	}
	dir := t.TempDir()
	marker := dir + "/ran"
	call := func(reg *tools.Registry, extra map[string]any) *tools.Result {
		a := map[string]any{"command": "touch " + marker, "description": "make a file"}
		for k, v := range extra {
			a[k] = v
		}
		args, _ := json.Marshal(a)
		return execute(t, reg, &tools.Call{Tool: BashName, Args: args, Session: session.Session{ID: "s", Cwd: dir}})
	}
	offered := mk(&Options{AskUnsandboxed: ask, Sandbox: &SandboxFacts{}})
	for _, extra := range []map[string]any{
		{"unsandboxed": true, "input": true},
		{"unsandboxed": true, "tty": true},
		{"unsandboxed": true, "input": true, "tty": true, "run_in_background": true},
	} {
		if res := call(offered, extra); !res.IsError || res.Text() != unsandboxedInteractive {
			t.Errorf("%v: %q", extra, res.Text())
		}
	}
	if len(asked) != 0 {
		t.Errorf("asked %d questions about calls refused at once", len(asked))
	}
	for _, tc := range []struct {
		name string
		o    *Options
		want string
	}{
		{"turned off", &Options{Sandbox: &SandboxFacts{}}, unsandboxedOff},
		{"no sandbox", nil, unsandboxedNoSandbox},
	} {
		if res := call(mk(tc.o), map[string]any{"unsandboxed": true}); !res.IsError || res.Text() != tc.want {
			t.Errorf("%s: %q", tc.name, res.Text())
		}
	}
	if len(asked) != 0 {
		t.Errorf("asked %d questions about an argument not offered", len(asked))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused call ran")
	}
	res := call(offered, map[string]any{"unsandboxed": true, "run_in_background": true})
	if res.IsError || len(asked) != 2 || !asked[1].Unsandboxed || !asked[1].Background || asked[0].Background {
		t.Errorf("a background call outside the sandbox: %q; asked %+v", res.Text(), asked)
	}
}
