//go:build linux

package toolbash

import (
	"context"
	"encoding/json"
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
