//go:build linux

package acpagent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/observe"
)

// TestObserve: a session's start says who the editor is and where the
// session works, each tool call is an event (the user's answer to the
// agent's question in it; a tool the model made up is invalid), and the
// session's end says the editor closed it; events name the session,
// never its owner token.
func TestObserve(t *testing.T) {
	var mu sync.Mutex
	var events []observe.Event
	sink := func(e observe.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
	r := newRigWith(t, rigOptions{observe: sink},
		fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", "echo hi"), {ID: "c2", Name: "nope", Args: map[string]any{"x": 1}}}}, fakellm.Turn{Text: "ok"})
	err := testwait.Call("initialize", func(ctx context.Context) error {
		_, err := r.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientInfo: &acp.Implementation{Name: "zed", Version: "0.200.0"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	sid := r.newSession(t, cwd)
	r.prompt(t, sid, "say hi")
	err = testwait.Call("session/close", func(ctx context.Context) error {
		_, err := r.conn.CloseSession(ctx, acp.CloseSessionRequest{SessionId: sid})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 4 {
		t.Fatalf("%d events, want 4: %+v", len(events), events)
	}
	start, ok := events[0].(*observe.SessionStart)
	if !ok || start.Session != observe.SessionName(string(sid)) || start.Front != "acp" || start.Client != "zed" || start.ClientVersion != "0.200.0" ||
		len(start.Roots) != 1 || start.Roots[0] != cwd || start.Containment != "none" {
		t.Errorf("the start: %+v", events[0])
	}
	bash, ok := events[1].(*observe.Call)
	if !ok || bash.Session != start.Session || bash.Tool != "bash" || bash.Command != "echo hi" || bash.Outcome != "ok" || bash.StdoutBytes != 3 ||
		bash.Permission == nil || bash.Permission.Verdict != "ask" || bash.Permission.Answer != "allowed once" {
		t.Errorf("the bash call: %+v", events[1])
	}
	if nope, ok := events[2].(*observe.Call); !ok || nope.Tool != "nope" || nope.Outcome != "invalid" || nope.Error != `unknown tool "nope"` {
		t.Errorf("the made-up tool's call: %+v", events[2])
	}
	if end, ok := events[3].(*observe.SessionEnd); !ok || end.Session != start.Session || end.Front != "acp" || end.Reason != "closed" {
		t.Errorf("the end: %+v", events[3])
	}
	for _, e := range events {
		if b, _ := json.Marshal(e); strings.Contains(string(b), string(sid)) {
			t.Errorf("an event holds the owner token: %s", b)
		}
	}
}
