//go:build linux

package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/bash/local"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeModel is an OpenAI-compatible chat-completions server that streams
// scripted turns in the real wire format (server-sent events of
// chat.completion.chunk objects).
type fakeModel struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	turns    []turn
	script   func(chatRequest) turn // if set, answers every request
	requests []chatRequest
	hold     chan struct{} // a turn with hold waits for it (or its cancellation)
	arrived  chan struct{} // one send per request
}

type turn struct {
	text  string
	calls []fakeCall
	hold  bool // wait on fakeModel.hold before answering
}

type fakeCall struct {
	id, name string
	args     map[string]any
}

type chatRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// messageTexts returns the role and text content of each message.
func (r chatRequest) messageTexts() []string {
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

func newFakeModel(t testing.TB, turns ...turn) *fakeModel {
	f := &fakeModel{t: t, turns: turns, hold: make(chan struct{}), arrived: make(chan struct{}, 100)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	select {
	case f.arrived <- struct{}{}:
	default:
	}
	tn := turn{text: "All done."}
	switch {
	case f.script != nil:
		tn = f.script(req)
	case len(f.turns) > 0:
		tn, f.turns = f.turns[0], f.turns[1:]
	}
	f.mu.Unlock()
	if tn.hold {
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
	if tn.text != "" {
		half := len(tn.text) / 2
		send(map[string]any{"content": tn.text[:half]}, nil)
		send(map[string]any{"content": tn.text[half:]}, nil)
	}
	for i, c := range tn.calls {
		args, _ := json.Marshal(c.args)
		half := len(args) / 2
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": string(args[:half])}}}}, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": string(args[half:])}}}}, nil)
	}
	finish := "stop"
	if len(tn.calls) > 0 {
		finish = "tool_calls"
	}
	send(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

func (f *fakeModel) request(i int) chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		f.t.Fatalf("only %d model requests", len(f.requests))
	}
	return f.requests[i]
}

func (f *fakeModel) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// testClient is the editor side: it records session updates and answers
// permission requests as scripted.
type testClient struct {
	mu       sync.Mutex
	updates  []acp.SessionNotification
	notify   chan acp.SessionNotification
	answer   func(acp.RequestPermissionRequest) acp.RequestPermissionResponse
	askedFor []acp.RequestPermissionRequest
}

func (c *testClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	select {
	case c.notify <- n:
	default:
	}
	return nil
}

func (c *testClient) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.askedFor = append(c.askedFor, p)
	answer := c.answer
	c.mu.Unlock()
	if answer == nil {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(allowOnce)}, nil
	}
	return answer(p), nil
}

func (c *testClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (c *testClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (c *testClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *testClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *testClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *testClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *testClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// sessionUpdates returns the updates of one session as JSON objects.
func (c *testClient) sessionUpdates(t testing.TB, sid acp.SessionId) []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, n := range c.updates {
		if n.SessionId != sid {
			continue
		}
		b, err := json.Marshal(n.Update)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		out = append(out, m)
	}
	return out
}

// waitUpdate waits for an update of sid that pred accepts.
func (c *testClient) waitUpdate(t testing.TB, sid acp.SessionId, pred func(map[string]any) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		for _, u := range c.sessionUpdates(t, sid) {
			if pred(u) {
				return
			}
		}
		select {
		case <-c.notify:
		case <-deadline:
			t.Fatalf("no such update among %v", c.sessionUpdates(t, sid))
		}
	}
}

// rig is an agent over a real executor, a fake model and a client over
// in-process pipes.
type rig struct {
	agent      *Agent
	model      *fakeModel
	client     *testClient
	conn       *acp.ClientSideConnection
	exec       *local.Executor
	disconnect func() // closes the client's end and waits for Serve
}

func newRig(t *testing.T, terminal bool, yolo bool, turns ...turn) *rig {
	t.Helper()
	exec, err := local.New(&local.Options{SpillDir: t.TempDir(), Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	model := newFakeModel(t, turns...)
	agent, err := New(exec, &Options{Model: "fake-model", Yolo: yolo,
		ClientOptions: []option.RequestOption{option.WithBaseURL(model.srv.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0)}})
	if err != nil {
		t.Fatal(err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- agent.Serve(context.Background(), a2cW, c2aR)
		a2cW.Close()
	}()
	client := &testClient{notify: make(chan acp.SessionNotification, 1)}
	conn := acp.NewClientSideConnection(client, c2aW, a2cR)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	var once sync.Once
	disconnect := func() {
		once.Do(func() {
			c2aW.Close()
			if err := <-served; err != nil {
				t.Error(err)
			}
			a2cR.Close()
			<-conn.Done()
		})
	}
	t.Cleanup(func() {
		disconnect()
		if err := exec.Close(); err != nil {
			t.Error(err)
		}
	})
	caps := acp.ClientCapabilities{}
	if terminal {
		caps.Meta = map[string]any{"terminal_output": true}
	}
	if _, err := conn.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatal(err)
	}
	return &rig{agent: agent, model: model, client: client, conn: conn, exec: exec, disconnect: disconnect}
}

func (r *rig) newSession(t *testing.T, cwd string) acp.SessionId {
	t.Helper()
	res, err := r.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return res.SessionId
}

func (r *rig) prompt(t *testing.T, sid acp.SessionId, text string) acp.StopReason {
	t.Helper()
	res, err := r.conn.Prompt(context.Background(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	return res.StopReason
}

func bashCall(id, command string, kv ...any) fakeCall {
	args := map[string]any{"command": command, "description": "Run " + strings.Fields(command)[0]}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	return fakeCall{id: id, name: "bash", args: args}
}
