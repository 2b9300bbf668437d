//go:build linux

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/observe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// events is a sink that keeps what it is told, in order, and passes each
// event on to a channel for the tests that wait for one.
type events struct {
	mu  sync.Mutex
	all []observe.Event
	ch  chan observe.Event
}

func newEvents() *events { return &events{ch: make(chan observe.Event, 100)} }

func (ev *events) sink(e observe.Event) {
	ev.mu.Lock()
	ev.all = append(ev.all, e)
	ev.mu.Unlock()
	ev.ch <- e
}

// next waits for the next event of type T, skipping others.
func next[T observe.Event](t *testing.T, ev *events) T {
	t.Helper()
	for {
		if e, ok := testwait.Recv(t, ev.ch, fmt.Sprintf("an event %T", *new(T))).(T); ok {
			return e
		}
	}
}

func (ev *events) count() int {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return len(ev.all)
}

// noSecret fails the test if any event holds secret.
func (ev *events) noSecret(t *testing.T, secret string) {
	t.Helper()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, e := range ev.all {
		if b, _ := json.Marshal(e); secret == "" || strings.Contains(string(b), secret) {
			t.Errorf("an event holds the owner token %q: %s", secret, b)
		}
	}
}

// TestObserveCalls: on both protocols, a session's start says who its
// client is, and each tool call is one event, filled by the gate and the
// tools on its way (a round that only asks the client is no call of its
// own), with the session's name, never its owner token; the session's
// end says the client closed it.
func TestObserveCalls(t *testing.T) {
	for _, v := range []string{"", legacy} {
		t.Run(map[string]string{"": "current", legacy: "legacy"}[v], func(t *testing.T) {
			ev := newEvents()
			o := permissionOptions(nil)
			if v != "" {
				o.SupportedProtocolVersions = []string{v}
			}
			o.Observe, o.Containment = ev.sink, "sandbox (jail)"
			r := newRig(t, o)
			cs := r.connect(t, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": choiceOnce}}, nil
				}}, r.cwd)
			var start *observe.SessionStart
			for i, tc := range []struct {
				tool       string
				args       map[string]any
				outcome    string
				permission string // verdict/answer
				err        string
			}{
				{"bash", bashArgs("echo hi"), "ok", "allow/", ""},
				{"bash", bashArgs("mkdir a"), "ok", "ask/allowed once", ""},
				{"bash", bashArgs("rm -rf a"), "denied", "deny/", "permission denied: `rm -rf a` matches rule deny \"rm\" (test)."},
				{"bash_output", map[string]any{"task_id": "bash-99"}, "error", "", `unknown bash task "bash-99"`},
			} {
				call(t, cs, tc.tool, tc.args)
				if i == 0 { // on protocol 2026-07-28, the first request is the call
					start = next[*observe.SessionStart](t, ev)
					if start.Session == "" || start.Front != "mcp-stdio" || start.Client != "test-client" || start.ClientVersion != "v1" || start.Containment != "sandbox (jail)" {
						t.Errorf("the session's start: %+v", start)
					}
				}
				c := next[*observe.Call](t, ev)
				perm := ""
				if c.Permission != nil {
					perm = c.Permission.Verdict + "/" + c.Permission.Answer
				}
				if c.Session != start.Session || c.Tool != tc.tool || c.Outcome != tc.outcome || perm != tc.permission ||
					!strings.HasPrefix(c.Error, tc.err) || c.Time.IsZero() || c.Duration <= 0 {
					t.Errorf("%s %v: %+v (permission %s); want outcome %s, permission %s, error %q", tc.tool, tc.args, c, perm, tc.outcome, tc.permission, tc.err)
				}
			}
			owner := r.ownerOf(t, cs)
			cs.Close()
			end := next[*observe.SessionEnd](t, ev)
			if end.Session != start.Session || end.Front != "mcp-stdio" || end.Reason != "closed" || end.Duration <= 0 {
				t.Errorf("the session's end: %+v", end)
			}
			ev.noSecret(t, owner)
			if n := ev.count(); n != 6 {
				t.Errorf("%d events, want 6: a start, four calls, an end", n)
			}
		})
	}
}

// TestObserveHTTPEnds: a streamable HTTP session's end says why: its
// client's DELETE closed it, its client was gone for the grace (idle),
// or the server shut down. /metrics is served behind the token.
func TestObserveHTTPEnds(t *testing.T) {
	ev := newEvents()
	r := newRig(t, &Options{Observe: ev.sink})
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "dsh_bash_test 1") })
	h := r.srv.HTTPHandler(&HTTPOptions{Token: testToken, SessionGrace: time.Hour, Metrics: metrics})
	hs := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); hs.Close() })
	hr := &httpRig{rig: r, h: h, url: hs.URL}
	names := map[string]string{} // by reason
	for _, reason := range []string{"closed", "idle", "shutdown"} {
		cs := hr.client(t, nil, false)
		call(t, cs, "bash", bashArgs("true"))
		start := next[*observe.SessionStart](t, ev)
		if start.Front != "mcp-http" || start.Client != "c" {
			t.Errorf("the session's start: %+v", start)
		}
		names[reason] = start.Session
		switch reason {
		case "closed":
			cs.Close() // a DELETE
		case "idle":
			h.sessions.mu.Lock()
			tr := h.sessions.byID[cs.ID()]
			gen := tr.gen
			h.sessions.mu.Unlock()
			h.sessions.expire(tr, gen) // what its grace's timer does
		case "shutdown":
			h.Close()
		}
		end := next[*observe.SessionEnd](t, ev)
		if end.Session != names[reason] || end.Reason != reason || end.Front != "mcp-http" {
			t.Errorf("%s: the session's end: %+v", reason, end)
		}
	}
	for auth, want := range map[string]int{"": http.StatusUnauthorized, "Bearer " + testToken: http.StatusOK} {
		req, _ := http.NewRequest("GET", hs.URL+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /metrics with %q: %s, want %d", auth, resp.Status, want)
		}
	}
}
