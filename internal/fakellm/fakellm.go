// Package fakellm is an OpenAI-compatible chat-completions server for
// tests: it streams scripted turns (text and tool calls) in the real wire
// format, server-sent events of chat.completion.chunk objects, and records
// the requests it got.
package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Server is an OpenAI-compatible chat-completions server that streams
// scripted turns in the real wire format (server-sent events of
// chat.completion.chunk objects).
type Server struct {
	t testing.TB
	// URL is the base URL to give an OpenAI client.
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	turns    []Turn
	script   func(Request) Turn
	requests []Request
	hold     chan struct{}
	release  sync.Once
	// Arrived receives one value per request (buffered; extra ones dropped).
	Arrived chan struct{}
}

// Turn is one scripted answer: text, tool calls, or both.
type Turn struct {
	Text  string
	Calls []Call
	Hold  bool // wait for Server.Release (or the request's end) before answering
}

// Call is a scripted tool call.
type Call struct {
	ID, Name string
	Args     map[string]any
}

// Request is a chat-completions request as the server received it.
type Request struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// MessageTexts returns the role and text content of each message.
func (r Request) MessageTexts() []string {
	var out []string
	for _, raw := range r.Messages {
		var m struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		}
		json.Unmarshal(raw, &m)
		s, _ := m.Content.(string)
		if parts, ok := m.Content.([]any); ok {
			for _, p := range parts {
				if pm, ok := p.(map[string]any); ok {
					s += fmt.Sprint(pm["text"])
				}
			}
		}
		out = append(out, m.Role+": "+s)
	}
	return out
}

func New(t testing.TB, turns ...Turn) *Server {
	f := &Server{t: t, turns: turns, hold: make(chan struct{}), Arrived: make(chan struct{}, 100)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	select {
	case f.Arrived <- struct{}{}:
	default:
	}
	tn := Turn{Text: "All done."}
	switch {
	case f.script != nil:
		tn = f.script(req)
	case len(f.turns) > 0:
		tn, f.turns = f.turns[0], f.turns[1:]
	}
	f.mu.Unlock()
	if tn.Hold {
		select {
		case <-f.hold:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(delta map[string]any, finish any) {
		chunk := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil)
	if tn.Text != "" {
		half := len(tn.Text) / 2
		send(map[string]any{"content": tn.Text[:half]}, nil)
		send(map[string]any{"content": tn.Text[half:]}, nil)
	}
	for i, c := range tn.Calls {
		args, _ := json.Marshal(c.Args)
		half := len(args) / 2
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(args[:half])}}}}, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": string(args[half:])}}}}, nil)
	}
	finish := "stop"
	if len(tn.Calls) > 0 {
		finish = "tool_calls"
	}
	send(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// Release lets the turns that hold answer.
func (f *Server) Release() { f.release.Do(func() { close(f.hold) }) }

// SetTurns replaces the turns still to come.
func (f *Server) SetTurns(turns ...Turn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.turns = turns
}

// SetScript makes script answer every request from now on.
func (f *Server) SetScript(script func(Request) Turn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = script
}

// Requests returns the requests received so far.
func (f *Server) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Request returns the i-th request received.
func (f *Server) Request(i int) Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		f.t.Fatalf("only %d model requests", len(f.requests))
	}
	return f.requests[i]
}
