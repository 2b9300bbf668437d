//go:build linux

package mcpserver

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash"
)

// TestAskEgress: on a protocol before 2026-07-28, a client that declared
// elicitation is asked about an unlisted host, and each answer is the
// proxy's decision (a declined form denies); a client without
// elicitation, and one on the current protocol (where a server asks only
// within a call's answer), cannot be asked.
func TestAskEgress(t *testing.T) {
	elicits := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	// ask connects a client and asks about its session, the client
	// answering with res.
	ask := func(t *testing.T, versions []string, caps *mcp.ClientCapabilities, res *mcp.ElicitResult) (egress.Decision, error) {
		r := newRig(t, &Options{SupportedProtocolVersions: versions})
		copts := &mcp.ClientOptions{Capabilities: caps}
		if caps != nil { // a handler declares elicitation of itself
			copts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return res, nil }
		}
		cs := r.connect(t, copts, r.cwd)
		call(t, cs, "bash", bashArgs("true")) // the server knows the session from its first call
		var owner string
		r.srv.mu.Lock()
		for o := range r.srv.owners {
			owner = o
		}
		r.srv.mu.Unlock()
		return testwait.Reply("AskEgress", func(ctx context.Context) (egress.Decision, error) {
			return r.srv.AskEgress(ctx, egress.Question{Owner: owner, Host: "example.org", Port: 443})
		})
	}
	for _, c := range []struct {
		res  *mcp.ElicitResult
		want egress.Decision
	}{
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": netOnce}}, egress.AllowOnce},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": netSession}}, egress.AllowSession},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": netDeny}}, egress.Deny},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": netDenyAll}}, egress.DenyAllNew},
		{&mcp.ElicitResult{Action: "decline"}, egress.Deny},
	} {
		if d, err := ask(t, []string{legacy}, elicits, c.res); err != nil || d != c.want {
			t.Errorf("answer %+v: %v, %v; want %v", c.res, d, err, c.want)
		}
	}
	// No answer is no decision: the client dismissed the question
	// (cancel), or answered with what the question did not offer (the
	// SDK's own check of the form may say so first).
	for _, c := range []struct {
		res  *mcp.ElicitResult
		want error
	}{
		{&mcp.ElicitResult{Action: "cancel"}, toolbash.ErrNoAnswer},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": choiceOnce}}, errNotAChoice},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": netSession, "also": "x"}}, errNotAChoice},
		{&mcp.ElicitResult{Action: "accept"}, errNotAChoice},
	} {
		if _, err := ask(t, []string{legacy}, elicits, c.res); err == nil || c.want == toolbash.ErrNoAnswer && !errors.Is(err, c.want) {
			t.Errorf("answer %+v: %v; want %v", c.res, err, c.want)
		}
	}
	once := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": netOnce}}
	if _, err := ask(t, []string{legacy}, nil, once); !errors.Is(err, toolbash.ErrCannotAsk) {
		t.Errorf("a client without elicitation: %v, want ErrCannotAsk", err)
	}
	if _, err := ask(t, nil, elicits, once); !errors.Is(err, toolbash.ErrCannotAsk) {
		t.Errorf("a client on the current protocol: %v, want ErrCannotAsk", err)
	}
}
