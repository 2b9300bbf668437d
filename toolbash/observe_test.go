//go:build linux

package toolbash

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/tools"
)

// observed runs a call with an event in its context, and returns both.
func observed(t *testing.T, reg *tools.Registry, s session.Session, tool string, a any) (*tools.Result, *observe.Call) {
	t.Helper()
	raw, _ := json.Marshal(a)
	c := &observe.Call{Tool: tool}
	ctx, cancel := context.WithTimeout(observe.WithCall(context.Background(), c), testwait.Limit)
	defer cancel()
	res := reg.Execute(ctx, &tools.Call{Tool: tool, Args: raw, Session: s})
	if ctx.Err() != nil {
		t.Fatalf("no result of %s %s within %v", tool, raw, testwait.Limit)
	}
	return res, c
}

// TestCallEvents: each layer of a real call fills its part of the call's
// event: the registry an invalid call's outcome, the gate the rules'
// verdict and the user's answer, the question to run outside the sandbox
// its answer, the bash tool the command and how it ended (exit code,
// signal, timeout, the streams' sizes and spill files), the task tools
// the task; and the executor's end of a background task is an event of
// its own, which names the session and never its owner token.
func TestCallEvents(t *testing.T) {
	ends := make(chan *observe.TaskEnd, 4)
	e, err := local.New(&local.Options{SpillDir: t.TempDir(), MaxOutputBytes: 100, Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	answer := AllowOnce
	ask := func(context.Context, Question) (Answer, error) { return answer, nil }
	tb := New(e, &Options{AskUnsandboxed: ask, Sandbox: &SandboxFacts{}, Observe: func(ev observe.Event) { ends <- ev.(*observe.TaskEnd) }})
	t.Cleanup(func() { tb.Close(); e.Close() })
	allow, _ := permission.NewRules(permission.Allow, "test", "echo", "seq", "sleep", "kill", "exit")
	deny, _ := permission.NewRules(permission.Deny, "test", "touch")
	g := NewGate(&GateOptions{Policy: &permission.Policy{Unmatched: permission.Ask, Rules: append(allow, deny...)}, Ask: ask})
	var reg tools.Registry
	reg.Use(g.Middleware)
	if err := tb.Register(&reg); err != nil {
		t.Fatal(err)
	}
	s := session.Session{ID: "owner-token-0123456789", Cwd: t.TempDir()}
	bashCall := func(cmd string, more ...any) args {
		a := args{"command": cmd, "description": "what " + cmd + " does"}
		for i := 0; i < len(more); i += 2 {
			a[more[i].(string)] = more[i+1]
		}
		return a
	}
	allowed := func(rule, words string) *observe.Permission {
		return &observe.Permission{Verdict: "allow", Rule: rule, Source: "test", Reason: "`" + words + "` matches rule allow \"" + rule + "\" (test)"}
	}
	for _, tc := range []struct {
		name   string
		args   args
		answer Answer
		want   observe.Call
	}{
		{"ok", bashCall("echo hi"), AllowOnce, observe.Call{Outcome: "ok", StdoutBytes: 3, Permission: allowed("echo", "echo hi")}},
		{"exit", bashCall("echo oops >&2; exit 3"), AllowOnce, observe.Call{Outcome: "exit", ExitCode: 3, StderrBytes: 5, Permission: allowed("echo", "echo oops")}},
		{"signal", bashCall("kill -TERM $$"), AllowOnce, observe.Call{Outcome: "signal", ExitCode: -1, Signal: "SIGTERM", Permission: allowed("kill", "kill -TERM …")}},
		{"timeout", bashCall("sleep 30", "timeoutMs", 50), AllowOnce, observe.Call{Outcome: "timeout", ExitCode: -1, Signal: "SIGTERM", Permission: allowed("sleep", "sleep 30")}},
		{"denied by a rule", bashCall("touch x"), AllowOnce, observe.Call{Outcome: "denied", Error: "permission denied: `touch x` matches rule deny \"touch\" (test). The command did not run; do not try to get around the rule. If the command is needed, ask the user.",
			Permission: &observe.Permission{Verdict: "deny", Rule: "touch", Source: "test", Reason: "`touch x` matches rule deny \"touch\" (test)"}}},
		{"asked, allowed once", bashCall("mkdir made"), AllowOnce, observe.Call{Outcome: "ok",
			Permission: &observe.Permission{Verdict: "ask", Reason: "no rule allows `mkdir made`", Answer: "allowed once"}}},
		{"asked, rejected", bashCall("mkdir other"), Reject, observe.Call{Outcome: "denied", Error: RejectedText,
			Permission: &observe.Permission{Verdict: "ask", Reason: "no rule allows `mkdir other`", Answer: "denied"}}},
		{"unsandboxed, allowed", bashCall("echo out", "unsandboxed", true), AllowOnce, observe.Call{Outcome: "ok", StdoutBytes: 4, Permission: allowed("echo", "echo out"),
			Unsandboxed: &observe.Question{Asked: true, Answer: "allowed"}}},
		{"unsandboxed, declined", bashCall("echo out", "unsandboxed", true), Reject, observe.Call{Outcome: "denied", Error: UnsandboxedDeclinedText, Permission: allowed("echo", "echo out"),
			Unsandboxed: &observe.Question{Asked: true, Answer: "denied"}}},
		{"invalid", args{"command": "echo hi"}, AllowOnce, observe.Call{Outcome: "invalid", Error: "missing required argument description"}},
	} {
		answer = tc.answer
		_, got := observed(t, &reg, s, BashName, tc.args)
		tc.want.Tool = BashName
		if d, ok := tc.args["description"]; ok {
			tc.want.Command, tc.want.Description = tc.args["command"].(string), d.(string)
		}
		if !reflect.DeepEqual(*got, tc.want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			t.Errorf("%s:\n got %s\nwant %s", tc.name, g, w)
		}
	}
	checkSpilled(t, &reg, s)
	checkTask(t, &reg, s, ends)
}

// checkSpilled: a run past the executor's memory names its spill file,
// and counts the whole stream.
func checkSpilled(t *testing.T, reg *tools.Registry, s session.Session) {
	t.Helper()
	_, got := observed(t, reg, s, BashName, args{"command": "seq 1000", "description": "count"})
	if got.Outcome != "ok" || got.StdoutBytes != 3893 || got.SpilledBytes != 3893 || len(got.Spills) != 1 || !strings.HasPrefix(got.Spills[0], "/") {
		t.Errorf("a spilled run: %+v; want stdout 3893 bytes, spilled, one spill file", got)
	}
}

// checkTask: a background task's start and reads name it; its end is an
// event that names the session, never the owner token.
func checkTask(t *testing.T, reg *tools.Registry, s session.Session, ends chan *observe.TaskEnd) {
	t.Helper()
	_, started := observed(t, reg, s, BashName, args{"command": "exit 4", "description": "fail later", "run_in_background": true})
	if started.Outcome != "ok" || !strings.HasPrefix(started.Task, "bash-") {
		t.Fatalf("a background start: %+v", started)
	}
	end := testwait.Recv(t, ends, "the task's end")
	want := observe.TaskEnd{Time: end.Time, Session: observe.SessionName(s.ID), Task: started.Task, Outcome: "exit", ExitCode: 4, Duration: end.Duration}
	if !reflect.DeepEqual(*end, want) || end.Time.IsZero() || end.Session == "" || end.Session == s.ID {
		t.Errorf("the task's end: %+v\nwant %+v", *end, want)
	}
	_, read := observed(t, reg, s, OutputName, args{"task_id": started.Task})
	if read.Task != started.Task || read.Outcome != "" {
		t.Errorf("bash_output: %+v; want the task, no outcome of its own (the front end's)", read)
	}
}

// TestRunNotes: what a foreground result says goes into its event,
// whatever ended it, the most telling first.
func TestRunNotes(t *testing.T) {
	refused := []bash.Refusal{{Program: "/usr/bin/zap", Argv: []string{"zap", "-f"}, Rule: "zap"}}
	for _, tc := range []struct {
		res  bash.RunResult
		want observe.Call
	}{
		{bash.RunResult{ExitCode: -1, Signal: "SIGKILL", Limit: "memory limit 2 GiB", Stdout: bash.Output{Text: "tail", Bytes: 9000, Truncated: true, SpillPath: "/s/out"}},
			observe.Call{Outcome: "limit", ExitCode: -1, Signal: "SIGKILL", Limit: "memory limit 2 GiB", StdoutBytes: 9000, Spills: []string{"/s/out"}, SpilledBytes: 9000}},
		{bash.RunResult{ExitCode: 1, Refused: refused, RefusedMore: 2, Stderr: bash.Output{Text: "refused"}},
			observe.Call{Outcome: "exit", ExitCode: 1, StderrBytes: 7, Refused: []observe.Refusal{{Program: "/usr/bin/zap", Argv: []string{"zap", "-f"}, Rule: "zap"}}, RefusedMore: 2}},
		{bash.RunResult{ExitCode: -1, Signal: "SIGTERM", TimedOut: true}, observe.Call{Outcome: "timeout", ExitCode: -1, Signal: "SIGTERM"}},
		{bash.RunResult{Adopted: "bash-7"}, observe.Call{Outcome: "ok", Task: "bash-7"}},
		{bash.RunResult{Aborted: true, ExitCode: -1, Signal: "SIGTERM"}, observe.Call{Outcome: "aborted", ExitCode: -1, Signal: "SIGTERM"}},
	} {
		var c observe.Call
		noteRun(observe.WithCall(context.Background(), &c), tc.res)
		if !reflect.DeepEqual(c, tc.want) {
			t.Errorf("%+v:\n got %+v\nwant %+v", tc.res, c, tc.want)
		}
	}
	for _, tc := range []struct {
		task bash.Task
		want string
	}{
		{bash.Task{Status: bash.StatusCompleted}, "ok"},
		{bash.Task{Status: bash.StatusCompleted, ExitCode: 2}, "exit"},
		{bash.Task{Status: bash.StatusKilled, ExitCode: -1, Signal: "SIGTERM"}, "signal"},
		{bash.Task{Status: bash.StatusKilled, ExitCode: -1, Signal: "SIGKILL", Limit: "memory limit 1 GiB"}, "limit"},
		{bash.Task{Status: bash.StatusFailed, Err: errors.New("no shell")}, "error"},
	} {
		if got := taskOutcome(tc.task); got != tc.want {
			t.Errorf("taskOutcome(%+v) = %q, want %q", tc.task, got, tc.want)
		}
	}
}
