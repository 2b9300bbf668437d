//go:build linux

package main

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/dshgo/dsh/internal/proctest"
)

// editor is a minimal ACP client: it keeps the agent's text and allows
// every command once.
type editor struct {
	mu   sync.Mutex
	text strings.Builder
	asks int
}

func (e *editor) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		e.mu.Lock()
		e.text.WriteString(c.Content.Text.Text)
		e.mu.Unlock()
	}
	return nil
}

func (e *editor) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asks++
	e.mu.Unlock()
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected("allow-once")}, nil
}

func (e *editor) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}
func (e *editor) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}
func (e *editor) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}
func (e *editor) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}
func (e *editor) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}
func (e *editor) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}
func (e *editor) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// TestACPBinary drives dsh-bash acp over real stdio: a prompt whose model
// runs a foreground command and starts a background one, then stdin EOF
// ends the agent and the background process with it.
func TestACPBinary(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pid")
	syscall.Mkfifo(fifo, 0o600)
	model := fakellm.New(t,
		fakellm.Turn{Calls: []fakellm.Call{
			{ID: "c1", Name: "bash", Args: map[string]any{"command": "echo from-bash", "description": "Echo"}},
			{ID: "c2", Name: "bash", Args: map[string]any{"command": "echo $$ > " + fifo + "; exec sleep 300", "description": "Sleep", "run_in_background": true}},
		}},
		fakellm.Turn{Text: "Started it."})
	cmd := execCommand("acp", "--model", "test-model", "--base-url", model.URL, "--api-key", "k")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ed := &editor{}
	conn := acp.NewClientSideConnection(ed, stdin, stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	pidc := make(chan int, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			pidc <- 0
			return
		}
		line, _ := bufio.NewReader(f).ReadString('\n')
		f.Close()
		pid, _ := strconv.Atoi(strings.TrimSpace(line))
		pidc <- pid
	}()
	res, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("run things")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", res, err)
	}
	pid := <-pidc
	ed.mu.Lock()
	text, asks := ed.text.String(), ed.asks
	ed.mu.Unlock()
	if text != "Started it." || asks != 2 {
		t.Errorf("agent text %q, %d permission requests", text, asks)
	}
	msgs := model.Request(1).MessageTexts()
	if got := msgs[len(msgs)-2:]; got[0] != "tool: from-bash\n" || got[1] != "tool: started background task bash-1" {
		t.Errorf("tool results %q", got)
	}
	if !proctest.Alive(pid) {
		t.Fatalf("the background sleep (%d) is not running", pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("dsh-bash acp exited with %v", err)
	}
	if proctest.Alive(pid) {
		t.Errorf("sleep %d outlived dsh-bash acp", pid)
	}
}

func TestACPUsage(t *testing.T) {
	if _, stderr, code := dshBash(t, "", "acp"); code != 2 || stderr != "dsh-bash acp: --model is required\n" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
