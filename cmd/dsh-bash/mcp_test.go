//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpClient starts the built dsh-bash mcp as a subprocess over stdio; the
// session is closed when the test ends.
func mcpClient(t *testing.T, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	return mcpClientWith(t, nil, args...)
}

// mcpClientWith is mcpClient with a client of these options.
func mcpClientWith(t *testing.T, copts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	return mcpClientOn(t, "", copts, args...)
}

// mcpClientOn is mcpClientWith on that protocol version ("": the newest).
func mcpClientOn(t *testing.T, protocol string, copts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	return connectMCP(t, execCommand(append([]string{"mcp"}, args...)...), protocol, copts)
}

// mcpClientRace is mcpClient with the race-built dsh-bash.
func mcpClientRace(t *testing.T, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	return connectMCP(t, raceCommand(append([]string{"mcp"}, args...)...), "", nil)
}

// connectMCP starts cmd, a dsh-bash mcp, and connects a client of copts
// to it on that protocol version ("": the newest).
func connectMCP(t *testing.T, cmd *exec.Cmd, protocol string, copts *mcp.ClientOptions) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	// The SDK sends SIGTERM when the server has not exited 5 s after stdin
	// closed: wait far longer, so that only the server's own handling of
	// stdin EOF can pass TestMCPStdioClientGone (which bounds the wait).
	tr := &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Minute}
	cs, err := testwait.Reply("initialize", func(ctx context.Context) (*mcp.ClientSession, error) {
		var sopts *mcp.ClientSessionOptions
		if protocol != "" {
			sopts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
		}
		return mcp.NewClient(&mcp.Implementation{Name: "test"}, copts).Connect(ctx, tr, sopts)
	})
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { closeMCP(t, cs, cmd) })
	return cs, cmd
}

// closeMCP closes the session, which waits for dsh-bash mcp to exit at its
// stdin's end; if it has not within testwait.Limit, it is killed and the
// test fails.
func closeMCP(t *testing.T, cs *mcp.ClientSession, cmd *exec.Cmd) {
	t.Helper()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		cs.Close()
	}()
	timer := time.NewTimer(testwait.Limit)
	defer timer.Stop()
	select {
	case <-closed:
	case <-timer.C:
		cmd.Process.Kill()
		<-closed
		t.Errorf("dsh-bash mcp did not exit within %v of its stdin's end", testwait.Limit)
	}
}

// execCommand is the built dsh-bash with args.
func execCommand(args ...string) *exec.Cmd { return exec.Command(binary, args...) }

// raceCommand is execCommand with the race-built dsh-bash (see TestMain).
func raceCommand(args ...string) *exec.Cmd { return exec.Command(raceBinary, args...) }

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := testwait.Reply("tools/call "+tool, func(ctx context.Context) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.(*mcp.TextContent).Text)
	}
	return strings.Join(parts, "\n--\n")
}

// inputAnswer writes in to a task with bash_input and returns the first
// result that holds want, reading on with empty inputs while the answer
// has not come: on a loaded machine a REPL's prompt (on stderr) and its
// answer may come further apart than bash_input's settle, and its start
// may take longer than the default wait. Each call waits for output, so
// nothing here polls.
func inputAnswer(t *testing.T, cs *mcp.ClientSession, id, in, want string) string {
	t.Helper()
	var got string
	for range 5 {
		got = callText(t, cs, "bash_input", map[string]any{"task_id": id, "input": in, "wait_ms": 20000})
		if strings.Contains(got, want) {
			break
		}
		in = ""
	}
	return got
}

// syncedPid starts a background task that reports its pid and then sleeps,
// and returns the pid once the task has written it.
func syncedPid(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "sync")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := callText(t, cs, "bash", map[string]any{"command": "echo $$ > " + fifo + "; exec sleep 300", "description": "Sleep", "run_in_background": true})
	if got != "started background task bash-1" {
		t.Fatalf("start: %q", got)
	}
	return proctest.PidFromFIFO(t, fifo)
}

var alive = proctest.Alive

// TestMCPStdioClientGone: closing the client (stdin EOF) stops dsh-bash
// mcp, and the background sleep dies with it.
func TestMCPStdioClientGone(t *testing.T) {
	t.Parallel()
	cs, cmd := mcpClient(t, "--cwd", t.TempDir())
	if got := callText(t, cs, "bash", map[string]any{"command": "echo hi", "description": "Say hi"}); got != "hi\n" {
		t.Errorf("call: %q", got)
	}
	pid := syncedPid(t, cs)
	if !alive(pid) {
		t.Fatal("the sleep is not running")
	}
	closeMCP(t, cs, cmd)
	if cmd.ProcessState == nil {
		t.Fatal("dsh-bash mcp did not exit when the client closed")
	}
	if alive(pid) {
		t.Errorf("sleep %d outlived dsh-bash mcp", pid)
	}
}

// TestMCPStdioSignal: SIGTERM stops dsh-bash mcp and its tasks.
func TestMCPStdioSignal(t *testing.T) {
	t.Parallel()
	cs, cmd := mcpClient(t)
	pid := syncedPid(t, cs)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cs.Wait(); close(done) }()
	testwait.Recv(t, done, "end of the session: dsh-bash mcp ignored SIGTERM")
	// Exited: the process has been reaped by the transport or will be.
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		for cmd.ProcessState == nil {
			if _, err := cmd.Process.Wait(); err != nil {
				break
			}
		}
	}()
	testwait.Recv(t, reaped, "exit of dsh-bash mcp, whose session ended")
	if alive(pid) {
		t.Errorf("sleep %d outlived dsh-bash mcp", pid)
	}
}

func TestMCPUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "extra"}, "dsh-bash mcp: unexpected arguments [\"extra\"]\n"},
	} {
		if _, stderr, code := dshBash(t, "", tc.args...); code != 2 || stderr != tc.want {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
}

// TestMCPInteractive: through the MCP server (the SDK's client, the
// calls Claude Code and Codex make), a Python REPL kept across three
// calls, a prompt answered, and the session's task list.
func TestMCPInteractive(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	cs, _ := mcpClientRace(t)
	start := callText(t, cs, "bash", map[string]any{"command": "python3 -u -i -q", "description": "Start a Python REPL", "input": true})
	// The start waits for the REPL's first prompt (on a loaded machine it
	// may come later, with the first answer).
	if !strings.HasPrefix(start, "started background task bash-1; its input is open: write to it with bash_input\n") {
		t.Fatalf("start: %q", start)
	}
	for _, step := range []struct{ in, want string }{
		{"x = 6 * 7\n", ""},
		{"print(x)\n", "42\n"},
		{"print(x + 1)\n", "43\n"},
	} {
		got := inputAnswer(t, cs, "bash-1", step.in, step.want)
		if !strings.HasPrefix(got, step.want) || !strings.HasSuffix(got, "[status: running, waiting for input]") {
			t.Errorf("bash_input %q: %q, want it to start %q, the REPL waiting for input", step.in, got, step.want)
		}
	}
	callText(t, cs, "bash", map[string]any{"command": `printf 'Overwrite? [y/N] '; read -r a; echo "answer: $a"`, "description": "Ask", "input": true})
	got := callText(t, cs, "bash_input", map[string]any{"task_id": "bash-2", "input": "y\n"})
	if !strings.Contains(got, "answer: y\n") || !strings.HasSuffix(got, "[status: completed, exit code: 0]") {
		t.Errorf("the prompt answered: %q", got)
	}
	list := callText(t, cs, "bash_tasks", map[string]any{})
	if !strings.HasPrefix(list, "bash-1 [status: running, waiting for input] started ") || !strings.Contains(list, ", input open: python3 -u -i -q\nbash-2 [status: completed, exit code: 0]") {
		t.Errorf("bash_tasks: %q", list)
	}
	// In a terminal: Python's own REPL, no flags needed; the answer
	// leaves out the terminal's echo of the line typed.
	if start := callText(t, cs, "bash", map[string]any{"command": "python3 -q", "description": "Python in a terminal", "tty": true}); !strings.HasSuffix(start, ">>> \n[status: running, waiting for input]") {
		inputAnswer(t, cs, "bash-3", "", ">>> ") // a start slower than the start's wait
	}
	got = callText(t, cs, "bash_input", map[string]any{"task_id": "bash-3", "input": "print(6 * 7)\n", "wait_ms": 20000}) // Python's start, on a loaded machine
	if !strings.Contains(got, "42\n>>> ") || strings.Contains(got, "print(6 * 7)") {
		t.Errorf("python3 in a terminal: %q", got)
	}
	bye := callText(t, cs, "bash_input", map[string]any{"task_id": "bash-1", "input": "", "eof": true})
	if !strings.HasSuffix(bye, "[status: completed, exit code: 0]") {
		t.Errorf("eof to the REPL: %q", bye)
	}
}

// TestMCPUnsandboxedOffered: the MCP server offers the bash argument
// unsandboxed where the sandbox is active and escape is "ask" (the
// default) and the client can be asked (it declared elicitation), with a
// description that says what the sandbox already allows, and tells the
// model in its instructions how to use it; the flag or the config file's
// "escape": "off", or a client that cannot be asked, removes both.
func TestMCPUnsandboxedOffered(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	conf := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(conf, []byte(`{"sandbox": {"escape": "off"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		mute  bool // the client cannot be asked
		args  []string
		offer bool
	}{
		{"default", false, nil, true},
		{"flag off", false, []string{"--sandbox-escape=off"}, false},
		{"config off", false, []string{"--config", conf}, false},
		{"a client that cannot be asked", true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			copts := elicitingClient(func(*mcp.ElicitRequest) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} })
			if tc.mute {
				copts = nil
			}
			cs, _ := mcpClientWith(t, copts, append([]string{"--sandbox=on", "--cwd", t.TempDir()}, tc.args...)...)
			res, err := testwait.Reply("tools/list", func(ctx context.Context) (*mcp.ListToolsResult, error) { return cs.ListTools(ctx, nil) })
			if err != nil {
				t.Fatal(err)
			}
			desc := ""
			for _, tool := range res.Tools {
				if s, _ := json.Marshal(tool.InputSchema); tool.Name == "bash" && strings.Contains(string(s), `"unsandboxed"`) {
					desc = string(s)
				}
			}
			told := strings.Contains(cs.InitializeResult().Instructions, "unsandboxed: true")
			if offered := desc != ""; offered != tc.offer || told != tc.offer {
				t.Errorf("offered %v, told in the instructions %v; want %v", offered, told, tc.offer)
			}
			if tc.offer && !strings.Contains(desc, "The sandbox already lets commands write to the workspace") {
				t.Errorf("the argument's description does not say what the sandbox allows: %s", desc)
			}
		})
	}
}

// elicitingClient are the options of a client that declares elicitation
// and answers each question with answer.
func elicitingClient(answer func(*mcp.ElicitRequest) *mcp.ElicitResult) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return answer(req), nil
		},
	}
}

// TestMCPREPLAdvice: every REPL the bash tool's description advises for
// input: true answers over the pipe as advised (the advice python3 -q or
// node without their flags gets nothing back over a pipe).
func TestMCPREPLAdvice(t *testing.T) {
	t.Parallel()
	cs, _ := mcpClient(t, "--sandbox=off")
	res, err := testwait.Reply("tools/list", func(ctx context.Context) (*mcp.ListToolsResult, error) { return cs.ListTools(ctx, nil) })
	if err != nil {
		t.Fatal(err)
	}
	desc := ""
	for _, tool := range res.Tools {
		if tool.Name == "bash" {
			desc = tool.Description
		}
	}
	for i, r := range []struct{ cmd, line string }{
		{"python3 -u -i -q", "print(6*7)\n"},
		{"node -i", "6*7\n"},
		{"sqlite3 -interactive", "select 6*7;\n"},
	} {
		if !strings.Contains(desc, r.cmd) {
			t.Errorf("the description does not advise %q", r.cmd)
		}
		if _, err := exec.LookPath(strings.Fields(r.cmd)[0]); err != nil {
			t.Logf("%s: not installed here", r.cmd)
			continue
		}
		callText(t, cs, "bash", map[string]any{"command": r.cmd, "description": "Start a REPL", "input": true})
		id := fmt.Sprintf("bash-%d", i+1)
		if got := inputAnswer(t, cs, id, r.line, "42"); !strings.Contains(got, "42") {
			t.Errorf("%s: %q", r.cmd, got)
		}
		callText(t, cs, "bash_kill", map[string]any{"task_id": id})
	}
	if strings.Contains(desc, "(python3 -q, node,") {
		t.Error("the description still advises REPLs without their flags")
	}
}

// TestMCPPipedCallAborted: three lines piped into dsh-bash mcp
// (initialize, initialized, a bash call) end with stdin's EOF, which
// aborts the call: it reads "command aborted" with the sandbox or without
// it, however far the session's jail had got in its start. (The jail's
// start is cut short only in some runs: each mode is tried several times.)
func TestMCPPipedCallAborted(t *testing.T) {
	t.Parallel()
	lines := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 30","description":"Sleep"}}}
`
	want := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"command aborted"}],"isError":true}}`
	// Under the sandbox the call meets its end before the jail's start in
	// about half the runs, and in its start in the others: ten runs miss
	// the latter once in a thousand times.
	for mode, runs := range map[string]int{"off": 2, "on": 10} {
		for i := range runs {
			t.Run(fmt.Sprintf("%s-%d", mode, i), func(t *testing.T) {
				t.Parallel()
				if mode == "on" {
					requireBwrap(t)
				}
				ws := t.TempDir()
				cmd := execCommand("mcp", "--sandbox="+mode, "--cwd", ws)
				cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
				cmd.Stdin = strings.NewReader(lines)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := run(t, cmd); err != nil {
					t.Fatalf("%v; stderr %q", err, errOut.String())
				}
				got := strings.Split(strings.TrimSpace(out.String()), "\n")
				if got[len(got)-1] != want {
					t.Errorf("the call's answer: %s; want %s", got[len(got)-1], want)
				}
				for _, pid := range processesNaming(ws) { // a jail's bwrap names it
					if err := proctest.WaitExit(pid, testwait.Limit); err != nil {
						syscall.Kill(pid, syscall.SIGKILL)
						t.Errorf("a process of the jail cut short outlived dsh-bash: %v", err)
					}
				}
			})
		}
	}
}

// TestMCPOnTerminalSaysSo: dsh-bash mcp started by hand, its stdin a
// terminal, says on stderr what it serves and how to stop it, and Ctrl-D
// stops it; a client's pipe gets no such line.
func TestMCPOnTerminalSaysSo(t *testing.T) {
	t.Parallel()
	master, slave := openPTY(t)
	cmd := execCommand("mcp", "--cwd", t.TempDir())
	cmd.Stdin, cmd.Env = slave, append(os.Environ(), "TMPDIR="+t.TempDir())
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // the test failed before its end
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	stderr := testwait.NewLines(pr)
	for { // past what a start may say of others' leftovers
		line, err := stderr.Next(t, "the line saying what dsh-bash mcp serves")
		if err != nil {
			t.Fatalf("no line saying what it serves: %v", err)
		}
		if strings.HasPrefix(line, "dsh-bash mcp: serving MCP on stdin and stdout") {
			if !strings.Contains(line, "Ctrl-D or Ctrl-C stops it") {
				t.Errorf("the line does not say how to stop it: %q", line)
			}
			break
		}
	}
	if _, err := master.Write([]byte{4}); err != nil { // Ctrl-D: the end of its input
		t.Fatal(err)
	}
	if err := testwait.Exit(t, cmd, "dsh-bash mcp after Ctrl-D"); err != nil {
		t.Errorf("exit: %v", err)
	}
	cmd = execCommand("mcp", "--cwd", t.TempDir())
	cmd.Stdin = strings.NewReader("")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := run(t, cmd); err != nil || strings.Contains(errOut.String(), "serving MCP") {
		t.Errorf("over a pipe: %v, stderr %q", err, errOut.String())
	}
}

// processesNaming are the processes with s in their command line.
func processesNaming(s string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		if pid, _ := strconv.Atoi(filepath.Base(d)); pid != os.Getpid() && bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
