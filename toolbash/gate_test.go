//go:build linux

package toolbash

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/tools"
)

// gated makes the tools over a local executor behind a gate with rules
// that allow ls and echo and deny touch.
func gated(t *testing.T, ask Asker) (*tools.Registry, *Gate) {
	t.Helper()
	e := newLocal(t)
	tb := New(e, nil)
	t.Cleanup(tb.Close)
	allow, _ := permission.NewRules(permission.Allow, "test", "ls", "echo")
	deny, _ := permission.NewRules(permission.Deny, "test", "touch")
	p := &permission.Policy{Unmatched: permission.Ask, Rules: append(allow, deny...)}
	g := NewGate(&GateOptions{Policy: p, Ask: ask, HowToAllow: func(p string) string { return "--allow '" + p + "'" }})
	var reg tools.Registry
	reg.Use(g.Middleware)
	if err := tb.Register(&reg); err != nil {
		t.Fatal(err)
	}
	return &reg, g
}

func callBash(t *testing.T, reg *tools.Registry, sid, cwd, cmd string) *tools.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"command": cmd, "description": "d"})
	return execute(t, reg, &tools.Call{Tool: BashName, Args: args, Session: session.Session{ID: sid, Cwd: cwd}})
}

// TestGateDenies: a denied command never starts, and the model reads the
// rule.
func TestGateDenies(t *testing.T) {
	reg, _ := gated(t, nil)
	dir := t.TempDir()
	res := callBash(t, reg, "s", dir, "echo hi && touch planted")
	want := "permission denied: `touch planted` matches rule deny \"touch\" (test). The command did not run; do not try to get around the rule. If the command is needed, ask the user."
	if !res.IsError || res.Text() != want {
		t.Errorf("got %q\nwant %q", res.Text(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil {
		t.Error("the denied command ran")
	}
	if res := callBash(t, reg, "s", dir, "echo hi"); res.IsError || res.Text() != "hi\n" {
		t.Errorf("an allowed command: %q", res.Text())
	}
}

// TestGateNobodyToAsk: without an asker an ask is a denial that says how to
// add a rule.
func TestGateNobodyToAsk(t *testing.T) {
	reg, _ := gated(t, nil)
	dir := t.TempDir()
	res := callBash(t, reg, "s", dir, "mkdir made")
	want := "this command needs the user's approval (no rule allows `mkdir made`), and this client cannot ask the user; it did not run. The user can allow it with a rule: --allow 'mkdir'."
	if !res.IsError || res.Text() != want {
		t.Errorf("got %q\nwant %q", res.Text(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err == nil {
		t.Error("the unapproved command ran")
	}
}

// TestGateAsks: the user's answers: once, always for the prefix in this
// session (another session is asked again), reject.
func TestGateAsks(t *testing.T) {
	var asked []string
	answer := AllowPrefixes
	reg, g := gated(t, func(_ context.Context, q Question) (Answer, error) {
		asked = append(asked, q.Command)
		return answer, nil
	})
	dir := t.TempDir()
	if res := callBash(t, reg, "s1", dir, "mkdir a"); res.IsError {
		t.Fatalf("allowed by the user: %q", res.Text())
	}
	if res := callBash(t, reg, "s1", dir, "mkdir b"); res.IsError || len(asked) != 1 {
		t.Errorf("the allowed prefix was asked about again: %q, asked %q", res.Text(), asked)
	}
	answer = Reject
	if res := callBash(t, reg, "s2", dir, "mkdir c"); res.Text() != RejectedText {
		t.Errorf("another session, rejected: %q", res.Text())
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); err == nil {
		t.Error("a rejected command ran")
	}
	g.EndSession("s1")
	if res := callBash(t, reg, "s1", dir, "mkdir d"); res.Text() != RejectedText || len(asked) != 3 {
		t.Errorf("after the session ended its allowance should be gone: %q, asked %q", res.Text(), asked)
	}
}

// TestGateAlwaysAllowsWhatItOffered: "always allow" allows the prefix
// the question offered, however odd its words (parentheses, quotes, a
// glob character): the same command is not asked about again.
func TestGateAlwaysAllowsWhatItOffered(t *testing.T) {
	var asked []string
	reg, _ := gated(t, func(_ context.Context, q Question) (Answer, error) {
		asked = append(asked, q.Command)
		return AllowPrefixes, nil
	})
	dir := t.TempDir()
	cmd := `perl -e 'print("(*) it'\''s")'`
	for range 2 {
		if res := callBash(t, reg, "s", dir, cmd); res.IsError || res.Text() != "(*) it's" {
			t.Fatalf("%s: %q", cmd, res.Text())
		}
	}
	if len(asked) != 1 {
		t.Errorf("asked %q, want once", asked)
	}
}

// TestGateAlwaysAnswersAskRule: "always allow" answers the user's own ask
// rule for the session (it was asked once, and need not be again), but
// never a deny rule.
func TestGateAlwaysAnswersAskRule(t *testing.T) {
	var asked []string
	reg, g := gated(t, func(_ context.Context, q Question) (Answer, error) {
		asked = append(asked, q.Command)
		return AllowPrefixes, nil
	})
	ask, _ := permission.NewRules(permission.Ask, "test", "mkdir")
	deny, _ := permission.NewRules(permission.Deny, "test", "mkdir -p")
	g.opts.Policy.Rules = append(g.opts.Policy.Rules, append(ask, deny...)...)
	dir := t.TempDir()
	for _, cmd := range []string{"mkdir a", "mkdir b"} {
		if res := callBash(t, reg, "s", dir, cmd); res.IsError {
			t.Fatalf("%s: %q", cmd, res.Text())
		}
	}
	if len(asked) != 1 {
		t.Errorf("asked %q, want once", asked)
	}
	if res := callBash(t, reg, "s", dir, "mkdir -p c/d"); !res.IsError {
		t.Errorf("a denied command ran after always allow: %q", res.Text())
	}
}

// TestAskErrorInResult: the error of an asker that gave no answer comes
// back to the front end with the call's result (tools.Result.Err), from
// the gate's question and from the question to run outside the sandbox;
// an answer leaves none.
func TestAskErrorInResult(t *testing.T) {
	later := errors.New("ask again later")
	ask := func(context.Context, Question) (Answer, error) { return Reject, later }
	reg, _ := gated(t, ask)
	if res := callBash(t, reg, "s", t.TempDir(), "mkdir made"); !res.IsError || res.Err != later {
		t.Errorf("the gate's question: %q, Err %v; want %v", res.Text(), res.Err, later)
	}
	tb := New(newLocal(t), &Options{AskUnsandboxed: ask})
	t.Cleanup(tb.Close)
	var plain tools.Registry
	if err := tb.Register(&plain); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"command": "true", "description": "d", "unsandboxed": true})
	res := execute(t, &plain, &tools.Call{Tool: BashName, Args: args, Session: session.Session{ID: "s", Cwd: t.TempDir()}})
	if !res.IsError || res.Err != later {
		t.Errorf("the question to run outside the sandbox: %q, Err %v; want %v", res.Text(), res.Err, later)
	}
	if res := callBash(t, reg, "s", t.TempDir(), "echo hi"); res.Err != nil {
		t.Errorf("a call nobody was asked about: Err %v", res.Err)
	}
}
