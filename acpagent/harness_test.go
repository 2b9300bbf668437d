//go:build linux

package acpagent

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/acptest"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is an agent over a real executor, a fake model and a client over
// in-process pipes.
type rig struct {
	agent      *Agent
	model      *fakellm.Server
	client     *acptest.Client
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
	client := acptest.New()
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
