//go:build linux

package acpagent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/acptest"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/toolbash"
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
	close      func() // disconnects and closes the executor; idempotent
}

// rigOptions shape a rig. The zero value: no terminal capability, every
// tool call asks for permission, the client reads the agent at full speed.
type rigOptions struct {
	terminal bool // the client announces _meta.terminal_output
	yolo     bool // the agent runs tools without asking
	// clientReader, if set, wraps the client's end of the agent's output
	// (e.g. acptest.PacedReader for a slow editor).
	clientReader func(io.Reader) io.Reader
	// permissions, if set, are the agent's permission rules.
	permissions *toolbash.GateOptions
	// baseURL, if set, is the model's in place of the fake model's.
	baseURL string
	// noKey gives the agent no API key (the test clears $OPENAI_API_KEY).
	noKey bool
	// unsandboxed offers the bash argument unsandboxed.
	unsandboxed bool
	// egress, if set, is the agent's network allowlist.
	egress *egress.Proxy
	// observe, if set, is told the agent's events.
	observe observe.Sink
}

func newRig(t testing.TB, terminal bool, yolo bool, turns ...fakellm.Turn) *rig {
	t.Helper()
	return newRigWith(t, rigOptions{terminal: terminal, yolo: yolo}, turns...)
}

func newRigWith(t testing.TB, o rigOptions, turns ...fakellm.Turn) *rig {
	t.Helper()
	exec, err := local.New(&local.Options{SpillDir: t.TempDir(), Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	model := fakellm.New(t, turns...)
	if o.baseURL == "" {
		o.baseURL = model.URL
	}
	agent, err := New(exec, &Options{Model: "fake-model", Yolo: o.yolo, Permissions: o.permissions,
		BaseURL: o.baseURL, APIKey: map[bool]string{false: "test-key", true: ""}[o.noKey], MaxRetries: -1,
		Unsandboxed: o.unsandboxed, Egress: o.egress, Observe: o.observe, Containment: "none"})
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
	var fromAgent io.Reader = a2cR
	if o.clientReader != nil {
		fromAgent = o.clientReader(a2cR)
	}
	conn := acp.NewClientSideConnection(client, c2aW, fromAgent)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	go func() {
		// A client that gave up reading (e.g. a message past the SDK's line
		// limit) must not leave the agent blocked on the pipe.
		<-conn.Done()
		a2cR.CloseWithError(errors.New("the client has gone"))
	}()
	var once, closeOnce sync.Once
	disconnect := func() {
		once.Do(func() {
			c2aW.Close()
			if err := testwait.Recv(t, served, "return of Serve once the client closed its end"); err != nil {
				t.Error(err)
			}
			a2cR.Close()
			testwait.Recv(t, conn.Done(), "end of the client's connection")
		})
	}
	closeAll := func() {
		closeOnce.Do(func() {
			disconnect()
			if err := exec.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(closeAll)
	r := &rig{agent: agent, model: model, client: client, conn: conn, exec: exec, disconnect: disconnect, close: closeAll}
	r.initialize(t, o.terminal)
	return r
}

// initialize sends initialize, announcing the terminal_output capability
// or not.
func (r *rig) initialize(t testing.TB, terminal bool) {
	t.Helper()
	caps := acp.ClientCapabilities{}
	if terminal {
		caps.Meta = map[string]any{"terminal_output": true}
	}
	err := testwait.Call("initialize", func(ctx context.Context) error {
		_, err := r.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientCapabilities: caps})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (r *rig) newSession(t testing.TB, cwd string) acp.SessionId {
	t.Helper()
	res, err := testwait.Reply("session/new", func(ctx context.Context) (acp.NewSessionResponse, error) {
		return r.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.SessionId
}

// prompt sends a prompt and returns its stop reason; the test fails if
// the prompt fails or gets no answer within testwait.Limit.
func (r *rig) prompt(t testing.TB, sid acp.SessionId, text string) acp.StopReason {
	t.Helper()
	stop, err := r.promptErr(sid, text)
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	return stop
}

// promptErr is prompt for a goroutine other than the test's: it returns
// the error instead of failing the test.
func (r *rig) promptErr(sid acp.SessionId, text string) (acp.StopReason, error) {
	res, err := testwait.Reply("session/prompt "+strconv.Quote(text), func(ctx context.Context) (acp.PromptResponse, error) {
		return r.conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	})
	return res.StopReason, err
}

// promptAsync sends a prompt from a goroutine of its own; receive its stop
// reason with testwait.Recv. A prompt that failed reads as the stop
// reason "prompt failed: ERROR".
func (r *rig) promptAsync(sid acp.SessionId, text string) <-chan acp.StopReason {
	done := make(chan acp.StopReason, 1)
	go func() {
		stop, err := r.promptErr(sid, text)
		if err != nil {
			stop = acp.StopReason("prompt failed: " + err.Error())
		}
		done <- stop
	}()
	return done
}

func bashCall(id, command string, kv ...any) fakellm.Call {
	args := map[string]any{"command": command, "description": "Run " + strings.Fields(command)[0]}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	return fakellm.Call{ID: id, Name: "bash", Args: args}
}

// cancel sends session/cancel.
func (r *rig) cancel(t testing.TB, sid acp.SessionId) {
	t.Helper()
	err := testwait.Call("session/cancel", func(ctx context.Context) error {
		return r.conn.Cancel(ctx, acp.CancelNotification{SessionId: sid})
	})
	if err != nil {
		t.Fatal(err)
	}
}
