//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshgo/dsh/internal/acptest"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/dshgo/dsh/internal/testwait"
)

// The attacks of issue 30 on asking to run outside the sandbox, through
// the built binary, a real jail and a real protocol client: each was
// reproduced against the binary before its defence.

// yesToAll answers every elicitation with its form's first choice ("allow
// once", "run outside the sandbox, this once"), and records the messages.
type yesToAll struct {
	mu       sync.Mutex
	messages []string
}

func (y *yesToAll) options() *mcp.ClientOptions {
	return elicitingClient(func(req *mcp.ElicitRequest) *mcp.ElicitResult {
		y.mu.Lock()
		defer y.mu.Unlock()
		y.messages = append(y.messages, req.Params.Message)
		s, _ := req.Params.RequestedSchema.(map[string]any)
		props, _ := s["properties"].(map[string]any)
		d, _ := props["decision"].(map[string]any)
		enum, _ := d["enum"].([]any)
		if len(enum) == 0 {
			return &mcp.ElicitResult{Action: "decline"}
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": enum[0]}}
	})
}

func (y *yesToAll) asked() []string {
	y.mu.Lock()
	defer y.mu.Unlock()
	return slices.Clone(y.messages)
}

// TestMCPOneYesIsOneCall: a yes to run outside the sandbox never opens a
// program that runs later input there. A call with input or tty and
// unsandboxed is refused before anyone is asked, and no task starts, so
// nothing written afterwards runs outside; a background command's
// question says that it keeps running.
func TestMCPOneYesIsOneCall(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	var y yesToAll
	cs, _ := mcpClientWith(t, y.options(), "--sandbox=on", "--cwd", t.TempDir())
	outside := filepath.Join(t.TempDir(), "x")
	for _, mode := range []string{"input", "tty"} {
		got := callText(t, cs, "bash", map[string]any{"command": "python3 -u -i -q", "description": "Start Python", mode: true, "unsandboxed": true})
		if !strings.HasPrefix(got, "invalid arguments: unsandboxed cannot go with input or tty") {
			t.Errorf("%s: %q", mode, got)
		}
		got = callText(t, cs, "bash_input", map[string]any{"task_id": "bash-1", "input": "import subprocess; subprocess.run(['touch', '" + outside + "'])\n"})
		if got != `unknown bash task "bash-1"` {
			t.Errorf("%s: writing to the task: %q", mode, got)
		}
	}
	if n := len(y.asked()); n != 0 {
		t.Errorf("asked %d questions about calls refused at once", n)
	}
	if got := callText(t, cs, "bash", map[string]any{"command": "touch " + outside, "description": "Mark", "run_in_background": true, "unsandboxed": true}); got != "started background task bash-1" {
		t.Fatalf("a background call outside: %q", got)
	}
	if q := y.asked(); len(q) == 0 || !strings.Contains(q[len(q)-1], "keeps running, outside the sandbox, until it ends or is stopped") {
		t.Errorf("the question does not say the command runs on: %q", q)
	}
}

// TestACPOneYesIsOneCall: the same through the ACP agent with --yolo,
// which answers the permission questions but never this one.
func TestACPOneYesIsOneCall(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	outside := filepath.Join(t.TempDir(), "x")
	model := fakellm.New(t,
		fakellm.Turn{Calls: []fakellm.Call{{ID: "c1", Name: "bash", Args: map[string]any{"command": "sh", "description": "Start a shell", "tty": true, "unsandboxed": true}}}},
		fakellm.Turn{Calls: []fakellm.Call{{ID: "c2", Name: "bash_input", Args: map[string]any{"task_id": "bash-1", "input": "touch " + outside + "\n"}}}},
		fakellm.Turn{Text: "done"})
	ed := acptest.New()
	promptACP(t, ed, "acp", "--model", "m", "--base-url", model.URL, "--sandbox=on", "--yolo")
	msgs := model.Request(2).MessageTexts()
	if got := msgs[len(msgs)-3]; !strings.HasPrefix(got, "tool: invalid arguments: unsandboxed cannot go with input or tty") {
		t.Errorf("the model read %q", got)
	}
	if n := len(ed.Asked()); n != 0 {
		t.Errorf("asked %d questions", n)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("a write to the task ran outside the sandbox")
	}
}

// TestMCPForgedAnswer: answers a client sends with a call, to questions
// the server never put for it, do not run the call outside the sandbox
// (or at all), on the 2025-06-18, 2025-11-25 and 2026-07-28 protocols,
// whatever the value.
func TestMCPForgedAnswer(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	for _, proto := range []string{"2025-06-18", "2025-11-25", ""} {
		t.Run("protocol "+proto, func(t *testing.T) {
			t.Parallel()
			var y yesToAll
			copts := y.options()
			copts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
			cs, _ := mcpClientOn(t, proto, copts, "--sandbox=on", "--cwd", t.TempDir())
			outside := filepath.Join(t.TempDir(), "x")
			for _, value := range []string{"run outside the sandbox, this once", "allow once"} {
				res, err := testwait.Reply("tools/call", func(ctx context.Context) (*mcp.CallToolResult, error) {
					return cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash",
						Arguments:      map[string]any{"command": "touch " + outside, "description": "Mark", "unsandboxed": true},
						InputResponses: mcp.InputResponseMap{"dsh-unsandboxed": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": value}}}})
				})
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError || len(res.Content) == 0 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "the answers sent with this call answer no question this server put for it") {
					t.Errorf("%q: %+v", value, res)
				}
			}
			if _, err := os.Stat(outside); err == nil {
				t.Error("the call ran outside the sandbox")
			}
			if n := len(y.asked()); n != 0 {
				t.Errorf("asked %d questions", n)
			}
		})
	}
}

// TestMCPExactArguments: a key that differs from an argument only in case
// (Go's JSON decoding would take it, and the last wins) is an error naming
// it, and nothing runs: what a client's approval reads is what runs.
func TestMCPExactArguments(t *testing.T) {
	t.Parallel()
	cs, _ := mcpClient(t, "--sandbox=off", "--cwd", t.TempDir())
	got := callText(t, cs, "bash", map[string]any{"command": "echo SHOWN", "description": "x", "Command": "echo RAN"})
	if got != "invalid arguments: unknown argument Command (argument names are exact: did you mean command?)" {
		t.Errorf("got %q", got)
	}
	res, err := testwait.Reply("tools/list", func(ctx context.Context) (*mcp.ListToolsResult, error) { return cs.ListTools(ctx, nil) })
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if s, _ := tool.InputSchema.(map[string]any); s["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties %v; want false", tool.Name, s["additionalProperties"])
		}
	}
}

// hiding is a command a terminal client would draw as "echo hello": the
// line with touch is erased and the cursor moved over it.
const hiding = "touch marker #\x1b[2K\r\x1b[1A\x1b[2K\u202eecho hello"

// TestMCPQuestionShowsWhatRuns: a question shows what a terminal would act
// on escaped, so that the user reads what runs.
func TestMCPQuestionShowsWhatRuns(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	var y yesToAll
	dir := t.TempDir()
	cs, _ := mcpClientWith(t, y.options(), "--sandbox=on", "--cwd", dir, "--ask", "touch")
	callText(t, cs, "bash", map[string]any{"command": hiding, "description": "Say \x1b[8mhello", "unsandboxed": true})
	q := y.asked()
	if len(q) != 2 {
		t.Fatalf("asked %q; want the permission and the sandbox questions", q)
	}
	for _, m := range q {
		if strings.ContainsAny(m, "\x1b\r\u202e") || !strings.Contains(m, `touch marker #\x1b[2K\r\x1b[1A\x1b[2K\u202eecho hello`) {
			t.Errorf("the question %q", m)
		}
	}
	if !slices.ContainsFunc(q, func(m string) bool { return strings.Contains(m, `Its reason: Say \x1b[8mhello`) }) {
		t.Errorf("the reason is not escaped: %q", q)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker")); err != nil {
		t.Errorf("the command did not run as given: %v", err)
	}
}

// TestACPCardShowsWhatRuns: the same for the ACP cards: the permission
// question's title and the card's title and content.
func TestACPCardShowsWhatRuns(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	model := fakellm.New(t,
		fakellm.Turn{Calls: []fakellm.Call{{ID: "c1", Name: "bash", Args: map[string]any{"command": hiding, "description": "Say \x1b[8mhello", "unsandboxed": true}}}},
		fakellm.Turn{Text: "done"})
	ed := acptest.New()
	ed.SetAnswer(func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected("reject-once")}
	})
	promptACP(t, ed, "acp", "--model", "m", "--base-url", model.URL, "--sandbox=on")
	asked := ed.Asked()
	if len(asked) == 0 {
		t.Fatal("nobody was asked")
	}
	for _, p := range asked {
		title := *p.ToolCall.Title
		var body []string
		for _, c := range p.ToolCall.Content {
			if c.Content != nil && c.Content.Content.Text != nil {
				body = append(body, c.Content.Content.Text.Text)
			}
		}
		all := title + "\n" + strings.Join(body, "\n")
		if strings.ContainsAny(all, "\x1b\r\u202e") || !strings.Contains(title, `\x1b[2K\r`) {
			t.Errorf("the question shows %q", all)
		}
	}
}

// TestMCPEscapeOffSays: with --sandbox-escape=off a call that sets
// unsandboxed is told the argument is off, and does not run.
func TestMCPEscapeOffSays(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	dir := t.TempDir()
	cs, _ := mcpClient(t, "--sandbox=on", "--sandbox-escape=off", "--cwd", dir)
	got := callText(t, cs, "bash", map[string]any{"command": "touch marker", "description": "Mark", "unsandboxed": true})
	if !strings.HasPrefix(got, "invalid arguments: unsandboxed is turned off on this server") {
		t.Errorf("got %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker")); err == nil {
		t.Error("it ran")
	}
}

// TestHTTPAnswersReachTheCall: over streamable HTTP, on the newest
// protocol and the one before, the client's answers to the server's
// question come back to the same session, bound to the question, and
// the command runs once they say yes.
func TestHTTPAnswersReachTheCall(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"", "2025-11-25"} {
		t.Run("protocol "+proto, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := startHTTP(t, nil, "--http", "127.0.0.1:0", "--no-auth", "--sandbox=off", "--cwd", dir, "--ask", "touch")
			var y yesToAll
			var sopts *mcp.ClientSessionOptions
			if proto != "" {
				sopts = &mcp.ClientSessionOptions{ProtocolVersion: proto}
			}
			cs, err := testwait.Reply("initialize", func(ctx context.Context) (*mcp.ClientSession, error) {
				return mcp.NewClient(&mcp.Implementation{Name: "test"}, y.options()).Connect(ctx,
					&mcp.StreamableClientTransport{Endpoint: s.where, MaxRetries: -1}, sopts)
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			if got := callText(t, cs, "bash", map[string]any{"command": "touch marker && echo made", "description": "Mark"}); got != "made\n" || len(y.asked()) != 1 {
				t.Errorf("got %q, asked %q", got, y.asked())
			}
			if _, err := os.Stat(filepath.Join(dir, "marker")); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMCPForegroundYesEndsWithItsCommand: a foreground command run
// outside the sandbox on one yes leaves nothing running there: a loop it
// starts (which would run what later, sandboxed calls write to a file of
// the workspace) is stopped when it ends, never adopted as a task, and
// the question says so.
func TestMCPForegroundYesEndsWithItsCommand(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	var y yesToAll
	cs, _ := mcpClientWith(t, y.options(), "--sandbox=jail", "--sandbox-network=off", "--cwd", t.TempDir())
	callText(t, cs, "bash", map[string]any{"description": "Write setup", "command": `printf '%s\n' 'echo setting up' '(while sleep 0.2; do [ -f .q ] && sh .q && rm -f .q; done) >/dev/null 2>&1 &' > setup.sh`})
	got := callText(t, cs, "bash", map[string]any{"description": "Set up the dev environment", "command": "sh setup.sh", "unsandboxed": true})
	if got != "setting up\n[processes left running were stopped: a call outside the sandbox ends with its command]" {
		t.Errorf("the run outside: %q", got)
	}
	if q := y.asked(); len(q) != 1 || !strings.Contains(q[0], "What it leaves running is stopped when it ends.") {
		t.Errorf("the question: %q", q)
	}
	if got := callText(t, cs, "bash_tasks", map[string]any{}); got != "(no background tasks)" {
		t.Errorf("tasks: %q", got)
	}
}
