//go:build linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/internal/acptest"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestACPBinary drives dsh-bash acp over real stdio: a prompt whose model
// runs a foreground command and starts a background one, then stdin EOF
// ends the agent and the background process with it.
func TestACPBinary(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "pid")
	syscall.Mkfifo(fifo, 0o600)
	model := fakellm.New(t,
		fakellm.Turn{Calls: []fakellm.Call{
			{ID: "c1", Name: "bash", Args: map[string]any{"command": "echo from-bash", "description": "Echo"}},
			{ID: "c2", Name: "bash", Args: map[string]any{"command": "echo $$ > " + fifo + "; exec sleep 300", "description": "Sleep", "run_in_background": true}},
		}},
		fakellm.Turn{Text: "Started it."})
	cmd := execCommand("acp", "--model", "test-model", "--base-url", model.URL)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=k")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ed := acptest.New()
	conn := acp.NewClientSideConnection(ed, stdin, stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	err := testwait.Call("initialize", func(ctx context.Context) error {
		_, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	sess, err := testwait.Reply("session/new", func(ctx context.Context) (acp.NewSessionResponse, error) {
		return conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := testwait.Reply("session/prompt", func(ctx context.Context) (acp.PromptResponse, error) {
		return conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("run things")}})
	})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", res, err)
	}
	pid := proctest.PidFromFIFO(t, fifo) // the background command waits for a reader
	if text, asks := ed.AgentText(sess.SessionId), len(ed.Asked()); text != "Started it." || asks != 2 {
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
	if err := testwait.Exit(t, cmd, "dsh-bash acp, once its stdin closed"); err != nil {
		t.Errorf("dsh-bash acp exited with %v", err)
	}
	if proctest.Alive(pid) {
		t.Errorf("sleep %d outlived dsh-bash acp", pid)
	}
}

func TestACPUsage(t *testing.T) {
	t.Parallel()
	open := filepath.Join(t.TempDir(), "key")
	os.WriteFile(open, []byte("sk-0123456789abcdef\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acp"}, "dsh-bash acp: --model is required\n"},
		{[]string{"acp", "--model", "m", "--api-key", "sk-secret"}, "dsh-bash acp: --api-key is not accepted: every user can read a command line; use --api-key-file PATH or OPENAI_API_KEY\n"},
		{[]string{"acp", "--model", "m", "--api-key=sk-secret"}, "dsh-bash acp: --api-key is not accepted: every user can read a command line; use --api-key-file PATH or OPENAI_API_KEY\n"},
		{[]string{"acp", "--model", "m", "--api-key-file", open}, fmt.Sprintf("dsh-bash acp: API key file %s is open to other users (mode 0644): chmod 600 %s\n", open, open)},
	} {
		if _, stderr, code := dshBash(t, "", tc.args...); code != 2 || stderr != tc.want {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
}

// TestACPSaysNoKey: started without an API key, the agent says so on
// stderr at once, not only at the first prompt.
func TestACPSaysNoKey(t *testing.T) {
	t.Parallel()
	_, errOut, _ := dshBashEnv(t, t.TempDir(), []string{"OPENAI_API_KEY="}, "acp", "--model", "m")
	if !strings.Contains(errOut, "dsh-bash acp: no API key: set OPENAI_API_KEY or give --api-key-file PATH") {
		t.Errorf("stderr %q", errOut)
	}
	_, errOut, _ = dshBashEnv(t, t.TempDir(), []string{"OPENAI_API_KEY=sk-test"}, "acp", "--model", "m")
	if strings.Contains(errOut, "no API key") {
		t.Errorf("with a key: stderr %q", errOut)
	}
}

// TestACPUnsandboxedCall: through the real binary with the sandbox on, a
// model's call that asks to run outside the sandbox is asked about and,
// allowed, writes where the sandbox refuses; with --sandbox-escape=off the
// argument is not offered, and the same call stays in the sandbox.
func TestACPUnsandboxedCall(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	for _, escape := range []string{"ask", "off"} {
		t.Run(escape, func(t *testing.T) {
			t.Parallel()
			outside := t.TempDir()
			planted := filepath.Join(outside, "planted")
			model := fakellm.New(t,
				fakellm.Turn{Calls: []fakellm.Call{{ID: "c1", Name: "bash",
					Args: map[string]any{"command": "echo x > " + planted, "description": "Write the user's file", "unsandboxed": true}}}},
				fakellm.Turn{Text: "done"})
			promptACP(t, acptest.New(), "acp", "--model", "m", "--base-url", model.URL, "--sandbox=on", "--sandbox-escape", escape)
			_, err := os.Stat(planted)
			if wrote := err == nil; wrote != (escape == "ask") {
				t.Errorf("--sandbox-escape=%s: the call wrote outside the sandbox: %v (model read %q)", escape, wrote, model.Request(1).MessageTexts())
			}
			offered, told := false, false
			for _, tool := range model.Request(0).Tools {
				p := string(tool.Function.Parameters)
				offered = offered || tool.Function.Name == "bash" && strings.Contains(p, `"unsandboxed"`)
				told = told || strings.Contains(p, "The sandbox already lets commands write to the workspace, /tmp and the tool caches, and reach the network")
			}
			prompt := strings.Join(model.Request(0).MessageTexts(), "\n")
			if offered != (escape == "ask") || told != offered || strings.Contains(prompt, "unsandboxed: true") != offered {
				t.Errorf("--sandbox-escape=%s: the argument offered: %v, its description says what the sandbox allows: %v; the system prompt:\n%s", escape, offered, told, prompt)
			}
		})
	}
}

// promptACP runs the built dsh-bash with args (an acp command) for one
// session of the editor ed, and sends it one prompt, "go", returning once
// the prompt's turn has ended and the agent has exited.
func promptACP(t *testing.T, ed *acptest.Client, args ...string) {
	t.Helper()
	cmd := execCommand(args...)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=k")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); testwait.Exit(t, cmd, "dsh-bash acp") }()
	conn := acp.NewClientSideConnection(ed, stdin, stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if err := testwait.Call("initialize", func(ctx context.Context) error {
		_, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	sess, err := testwait.Reply("session/new", func(ctx context.Context) (acp.NewSessionResponse, error) {
		return conn.NewSession(ctx, acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testwait.Reply("session/prompt", func(ctx context.Context) (acp.PromptResponse, error) {
		return conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("go")}})
	}); err != nil {
		t.Fatal(err)
	}
}

// TestACPInteractive: through the ACP agent, a model starts a REPL with
// input and writes to it across two calls; each write is asked about as
// a bash call is (what it writes runs), shown on a card titled with the
// task, and the model reads the answers.
func TestACPInteractive(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	call := func(id, tool string, args map[string]any) fakellm.Turn {
		return fakellm.Turn{Calls: []fakellm.Call{{ID: id, Name: tool, Args: args}}}
	}
	model := fakellm.New(t,
		call("c1", "bash", map[string]any{"command": "python3 -u -i -q", "description": "Start Python", "input": true}),
		call("c2", "bash_input", map[string]any{"task_id": "bash-1", "input": "x = 20\n", "wait_ms": 20000}),
		call("c3", "bash_input", map[string]any{"task_id": "bash-1", "input": "print(x + 22)\n", "wait_ms": 20000}),
		// The end of input: the REPL exits, and the call returns all it
		// printed since c3 (on a loaded machine the answer may come after
		// c3's settle).
		call("c4", "bash_input", map[string]any{"task_id": "bash-1", "input": "", "eof": true, "wait_ms": 20000}),
		fakellm.Turn{Text: "done"})
	ed := acptest.New()
	promptACP(t, ed, "acp", "--model", "m", "--base-url", model.URL)
	if got := strings.Join(model.Request(4).MessageTexts(), "\n"); !strings.Contains(got, "tool: 42\n") || !strings.Contains(got, "[status: completed, exit code: 0]") {
		t.Errorf("the model's last request: %q, want the REPL's answer and its end", got)
	}
	var titles []string
	for _, p := range ed.Asked() {
		if p.ToolCall.Title != nil {
			titles = append(titles, *p.ToolCall.Title)
		}
	}
	if want := []string{"python3 -u -i -q", "Write to background task bash-1", "Write to background task bash-1", "Write to background task bash-1"}; !slices.Equal(titles[:min(4, len(titles))], want) {
		t.Errorf("permission requests: %q, want %q first", titles, want)
	}
}
