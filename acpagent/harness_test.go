//go:build linux

package acpagent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	model      *fakellm.Server
	client     *testClient
	conn       *acp.ClientSideConnection
	exec       *local.Executor
	disconnect func() // closes the client's end and waits for Serve
}

func newRig(t *testing.T, terminal bool, yolo bool, turns ...fakellm.Turn) *rig {
	t.Helper()
	exec, err := local.New(&local.Options{SpillDir: t.TempDir(), Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	model := fakellm.New(t, turns...)
	agent, err := New(exec, &Options{Model: "fake-model", Yolo: yolo,
		ClientOptions: []option.RequestOption{option.WithBaseURL(model.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0)}})
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

func bashCall(id, command string, kv ...any) fakellm.Call {
	args := map[string]any{"command": command, "description": "Run " + strings.Fields(command)[0]}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	return fakellm.Call{ID: id, Name: "bash", Args: args}
}
