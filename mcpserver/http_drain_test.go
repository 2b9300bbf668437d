//go:build linux

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// held is a bash call in flight that runs until released.
type held struct {
	gate string
	done chan heldResult
}

type heldResult struct {
	text string
	err  error
}

// hold starts a bash call on cs and returns once its command runs.
func hold(t *testing.T, cs *mcp.ClientSession) *held {
	t.Helper()
	dir := t.TempDir()
	running, gate := filepath.Join(dir, "running"), filepath.Join(dir, "gate")
	for _, f := range []string{running, gate} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := &held{gate: gate, done: make(chan heldResult, 1)}
	go func() {
		res, err := callErr(cs, "bash", bashArgs("echo > "+running+"; read x < "+gate+"; echo released"))
		if err != nil {
			h.done <- heldResult{err: err}
			return
		}
		h.done <- heldResult{text: text(res)}
	}()
	testwait.ReadFIFO(t, running, "sign that the held call runs")
	return h
}

// release lets the call's command end and returns the call's text.
func (h *held) release(t *testing.T) string {
	t.Helper()
	testwait.WriteFIFO(t, h.gate, "go", "release of the held call")
	return h.result(t)
}

// result waits for the call's answer.
func (h *held) result(t *testing.T) string {
	t.Helper()
	r := testwait.Recv(t, h.done, "answer of the held call")
	if r.err != nil {
		return "error: " + r.err.Error()
	}
	return r.text
}

// refusedNew checks that a new session is refused as draining: 503,
// Retry-After, a JSON-RPC error with the request's id.
func refusedNew(t *testing.T, url, retryAfter string) {
	t.Helper()
	resp := post(t, url, initialize, "Authorization", "Bearer "+testToken)
	body, _ := io.ReadAll(resp.Body)
	var msg struct {
		ID    int
		Error struct {
			Code    int
			Message string
		}
	}
	err := json.Unmarshal(body, &msg)
	want := "dsh-bash: this server is shutting down and takes no new sessions: try again, and another server (or this one, restarted) will take it"
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != retryAfter ||
		resp.Header.Get("Content-Type") != "application/json" || msg.ID != 7 || msg.Error.Code != codeServerBusy || msg.Error.Message != want {
		t.Errorf("a new session while draining: %s, Retry-After %q, %q, %v", resp.Status, resp.Header.Get("Retry-After"), body, err)
	}
}

// TestHTTPDrain: while draining, new sessions are refused with 503 and
// Retry-After and /readyz says so, while the open sessions are served,
// new calls included; Drain returns once no call is in flight, or when
// its context ends. A session cap's refusal has no Retry-After.
func TestHTTPDrain(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, RetryAfter: 2500 * time.Millisecond})
	a := r.client(t, nil, true)
	b := r.client(t, nil, false)
	long := hold(t, a)
	drained := make(chan error, 1)
	go func() { drained <- r.h.Drain(context.Background()) }()
	if !testwait.Until(r.h.Draining) {
		t.Fatal("not draining")
	}
	refusedNew(t, r.url, "3")
	if code, body, _ := probe(t, "GET", r.url+ReadyPath); code != 503 || body != "draining\n" {
		t.Errorf("readyz while draining: %d %q", code, body)
	}
	if code, body, _ := probe(t, "GET", r.url+HealthPath); code != 200 || body != "ok\n" {
		t.Errorf("healthz while draining: %d %q", code, body)
	}
	if got := text(call(t, b, "bash", bashArgs("echo still served"))); got != "still served\n" {
		t.Errorf("an open session's new call: %q", got)
	}
	short := hold(t, b) // a call started during the drain holds it too
	if got := long.release(t); got != "released\n" {
		t.Errorf("the call in flight: %q", got)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned with a call in flight: %v", err)
	default:
	}
	if got := short.release(t); got != "released\n" {
		t.Errorf("the call started while draining: %q", got)
	}
	if err := testwait.Recv(t, drained, "return of Drain"); err != nil {
		t.Errorf("Drain: %v", err)
	}
	if n := r.h.Sessions(); n != 2 {
		t.Errorf("Drain ended sessions: %d open", n)
	}
	// A drain that runs out of time says so, and ends nothing.
	third := hold(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.h.Drain(ctx); !errors.Is(err, context.Canceled) || r.h.CallsInFlight() != 1 {
		t.Errorf("Drain with its context done: %v, %d in flight", err, r.h.CallsInFlight())
	}
	if got := third.release(t); got != "released\n" {
		t.Errorf("the call in flight: %q", got)
	}
	// Once closed, the refusal is the same.
	r.h.Close()
	refusedNew(t, r.url, "3")

	capped := newHTTPRig(t, &HTTPOptions{Token: testToken, MaxSessions: -1})
	capped.h.sessions.max = 1
	capped.client(t, nil, false)
	if resp := post(t, capped.url, initialize, "Authorization", "Bearer "+testToken); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "" {
		t.Errorf("past the cap: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
}

// TestServeStreamableDrain: once Drain is closed, ServeStreamable drains
// (OnDrain comes when it does), serves the calls in flight to their end,
// then ends the sessions (their tasks die) and returns nil; with
// DrainTimeout negative, or ctx done during the drain, the calls in
// flight are aborted.
func TestServeStreamableDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cut     bool // cancel ctx during the drain
		want    string
	}{
		{"calls finish", time.Hour, false, "released\n"},
		{"no wait", -1, false, "aborted"},
		{"cut short", time.Hour, true, "aborted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drain := make(chan struct{})
			// OnDrain comes once the drain holds: a probe then says so.
			var url string
			onDrain := make(chan string, 1)
			hr, _, cancel, served := serveStreamable(t, &HTTPOptions{Token: testToken, Drain: drain, DrainTimeout: tc.timeout,
				OnDrain: func() { onDrain <- probeAnswer(url + ReadyPath) }})
			url = hr.url
			cs := hr.client(t, nil, true)
			bg := background(t, cs)
			long := hold(t, cs)
			close(drain)
			if got := testwait.Recv(t, onDrain, "OnDrain"); got != "Service Unavailable draining\n" {
				t.Errorf("the ready probe when OnDrain came: %q", got)
			}
			if tc.want == "aborted" {
				if tc.cut {
					if !testwait.Until(func() bool { return probeAnswer(hr.url+ReadyPath) == "Service Unavailable draining\n" }) {
						t.Fatal("not draining")
					}
					cancel()
				}
				// The client gets an error, or the result of an aborted call.
				if got := long.result(t); !strings.HasPrefix(got, "error: ") && got != "command aborted" {
					t.Errorf("the call in flight: %q", got)
				}
			} else {
				if !testwait.Until(func() bool { return probeAnswer(hr.url+ReadyPath) == "Service Unavailable draining\n" }) {
					t.Fatal("not draining")
				}
				if got := long.release(t); got != tc.want {
					t.Errorf("the call in flight: %q", got)
				}
			}
			if err := testwait.Recv(t, served, "return of ServeStreamable"); err != nil {
				t.Errorf("ServeStreamable: %v", err)
			}
			waitExit(t, "the session's background task", bg)
			if proctest.Alive(bg) {
				t.Error("the background task outlived the server")
			}
		})
	}
}
