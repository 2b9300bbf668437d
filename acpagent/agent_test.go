//go:build linux

package acpagent

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/acptest"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash"
	"golang.org/x/tools/txtar"
)

// normalize merges consecutive terminal_output updates of a call (the
// output may arrive in any number of pieces) and drops agent message
// chunks, which are checked on their own.
func normalize(updates []map[string]any) []map[string]any {
	var out []map[string]any
	for _, u := range updates {
		if u["sessionUpdate"] == "agent_message_chunk" {
			continue
		}
		if data, ok := terminalData(u); ok && len(out) > 0 {
			if prev, ok := terminalData(out[len(out)-1]); ok {
				out[len(out)-1]["_meta"].(map[string]any)["terminal_output"].(map[string]any)["data"] = prev + data
				continue
			}
		}
		out = append(out, u)
	}
	return out
}

func terminalData(u map[string]any) (string, bool) {
	meta, _ := u["_meta"].(map[string]any)
	to, _ := meta["terminal_output"].(map[string]any)
	data, ok := to["data"].(string)
	return data, ok
}

// cardStatuses are the statuses the updates give card id, in order.
func cardStatuses(updates []map[string]any, id string) []string {
	var out []string
	for _, u := range updates {
		if st, ok := u["status"].(string); ok && u["toolCallId"] == id {
			out = append(out, st)
		}
	}
	return out
}

func mustJSON(t *testing.T, s string) []map[string]any {
	t.Helper()
	var v []map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return v
}

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

// goldenUpdates compares a session's updates with a section of
// testdata/cards.txtar, the session cwd written as $CWD; -update rewrites
// the section.
func goldenUpdates(t *testing.T, name string, got []map[string]any, cwd string) {
	t.Helper()
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // commands read as written: 2>&1, not 2\u003e\u00261
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(buf.String(), cwd, "$CWD")
	const path = "testdata/cards.txtar"
	ar, err := txtar.ParseFile(path)
	if err != nil && !*update {
		t.Fatalf("%v (run go test -update)", err)
	}
	if ar == nil {
		ar = &txtar.Archive{Comment: []byte("ACP session updates of tool calls, as a client receives them; regenerate with go test -update.\n")}
	}
	for i, f := range ar.Files {
		if f.Name != name {
			continue
		}
		if *update {
			ar.Files[i].Data = []byte(text)
			os.WriteFile(path, txtar.Format(ar), 0o644)
		} else if string(f.Data) != text {
			t.Errorf("%s:\ngot:\n%swant:\n%s", name, text, f.Data)
		}
		return
	}
	if !*update {
		t.Fatalf("no section %s in %s (run go test -update)", name, path)
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(text)})
	os.WriteFile(path, txtar.Format(ar), 0o644)
}

func agentText(updates []map[string]any) string {
	var b strings.Builder
	for _, u := range updates {
		if u["sessionUpdate"] == "agent_message_chunk" {
			b.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	return b.String()
}

func TestForegroundTerminalCard(t *testing.T) {
	cwd := t.TempDir()
	r := newRig(t, true, true, fakellm.Turn{Calls: []fakellm.Call{bashCall("call_1", "echo hello")}}, fakellm.Turn{Text: "Printed hello."})
	sid := r.newSession(t, cwd)
	if got := r.prompt(t, sid, "say hello"); got != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %s", got)
	}
	updates := r.client.SessionUpdates(t, sid)
	goldenUpdates(t, "foreground-terminal", normalize(updates), cwd)
	if got := agentText(updates); got != "Printed hello." {
		t.Errorf("agent text %q", got)
	}
	// The model got the tool's text back, and the tools.
	req := r.model.Request(1)
	msgs := req.MessageTexts()
	if last := msgs[len(msgs)-1]; last != "tool: hello\n" {
		t.Errorf("last message to the model %q", last)
	}
	if len(req.Tools) != 5 || req.Tools[0].Function.Name != "bash" || req.Tools[3].Function.Name != "bash_input" || req.Tools[4].Function.Name != "bash_tasks" {
		t.Errorf("tools %+v", req.Tools)
	}
}

func TestForegroundWithoutTerminal(t *testing.T) {
	cwd := t.TempDir()
	r := newRig(t, false, true, fakellm.Turn{Calls: []fakellm.Call{bashCall("call_1", "echo hello", "workdir", "sub")}}, fakellm.Turn{Text: "ok"})
	os.Mkdir(filepath.Join(cwd, "sub"), 0o755)
	sid := r.newSession(t, cwd)
	r.prompt(t, sid, "go")
	goldenUpdates(t, "foreground-no-terminal", normalize(r.client.SessionUpdates(t, sid)), cwd)
}

func TestTerminalCwdRelative(t *testing.T) {
	cwd := t.TempDir()
	os.Mkdir(filepath.Join(cwd, "sub"), 0o755)
	r := newRig(t, true, true, fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", "pwd", "workdir", "sub")}}, fakellm.Turn{Text: "ok"})
	sid := r.newSession(t, cwd)
	r.prompt(t, sid, "go")
	u := normalize(r.client.SessionUpdates(t, sid))
	if got := u[0]["_meta"].(map[string]any)["terminal_info"].(map[string]any)["cwd"]; got != filepath.Join(cwd, "sub") {
		t.Errorf("terminal cwd %v", got)
	}
	if data, _ := terminalData(u[2]); data != filepath.Join(cwd, "sub")+"\n" {
		t.Errorf("pwd %q", data)
	}
}

// TestLiveTerminalOutput: output reaches the card while the command runs.
func TestLiveTerminalOutput(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "go")
	syscall.Mkfifo(fifo, 0o600)
	r := newRig(t, true, true, fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", "echo first; read < "+fifo+"; echo second")}}, fakellm.Turn{Text: "ok"})
	sid := r.newSession(t, t.TempDir())
	done := r.promptAsync(sid, "go")
	r.client.WaitUpdate(t, sid, func(u map[string]any) bool { d, _ := terminalData(u); return strings.Contains(d, "first") })
	for _, u := range r.client.SessionUpdates(t, sid) {
		if u["status"] == "completed" {
			t.Fatal("the call completed before its command was released")
		}
	}
	testwait.WriteFIFO(t, fifo, "", "the command")
	if got := testwait.Recv(t, done, "end of the prompt"); got != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %s", got)
	}
	u := normalize(r.client.SessionUpdates(t, sid))
	// The card is pending until the command starts, then in progress.
	if data, _ := terminalData(u[2]); u[0]["status"] != "pending" || u[1]["status"] != "in_progress" ||
		data != "first\nsecond\n" || u[3]["status"] != "completed" {
		t.Errorf("updates %v", u)
	}
}

// TestSlowEditorSkips: output that piles up while the editor is not
// reading is cut to its newest part, and the terminal shows a marker with
// the count of what it skipped; the model still gets the executor's text.
func TestSlowEditorSkips(t *testing.T) {
	dir := t.TempDir()
	goFifo, doneFifo := filepath.Join(dir, "go"), filepath.Join(dir, "done")
	syscall.Mkfifo(goFifo, 0o600)
	syscall.Mkfifo(doneFifo, 0o600)
	// Of the 3 MB, the executor has read at least 2 MB (its pipe holds 1
	// MiB) once the command is over: that much reaches the Sender while
	// the editor is not reading, far more than it keeps.
	const size = 3_000_000
	cmd := fmt.Sprintf(`echo first; read < %s; head -c %d /dev/zero | tr '\0' a; echo; echo last; echo > %s`, goFifo, size, doneFifo)
	var valve *acptest.Valve
	r := newRigWith(t, rigOptions{terminal: true, yolo: true, clientReader: func(r io.Reader) io.Reader { valve = acptest.NewValve(r); return valve }},
		fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", cmd)}}, fakellm.Turn{Text: "ok"})
	t.Cleanup(valve.Open)
	sid := r.newSession(t, t.TempDir())
	done := r.promptAsync(sid, "go")
	r.client.WaitUpdate(t, sid, func(u map[string]any) bool { d, _ := terminalData(u); return strings.Contains(d, "first") })
	valve.Hold() // the editor stops reading
	testwait.WriteFIFO(t, goFifo, "", "the command")
	testwait.ReadFIFO(t, doneFifo, "end of the command's output")
	valve.Open()
	if got := testwait.Recv(t, done, "end of the prompt"); got != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %s", got)
	}

	data, _ := terminalData(normalize(r.client.SessionUpdates(t, sid))[2])
	full := "first\n" + strings.Repeat("a", size) + "\nlast\n"
	if !strings.Contains(data, "[… ") {
		t.Fatalf("no skip marker in %d bytes of terminal output", len(data))
	}
	// What the terminal shows, with each marker read as the bytes it
	// stands for, is the command's output.
	marker := regexp.MustCompile(`\r\n\[… (\d+) bytes of output skipped …\]\r\n`)
	pos, rest := 0, data
	for rest != "" {
		m := marker.FindStringSubmatchIndex(rest)
		if m == nil {
			m = []int{len(rest), len(rest), 0, 0}
		}
		shown := rest[:m[0]]
		if !strings.HasPrefix(full[pos:], shown) {
			t.Fatalf("shown text at byte %d of the output differs from it", pos)
		}
		pos += len(shown)
		if m[1] > m[0] {
			n, _ := strconv.Atoi(rest[m[2]:m[3]])
			if rest[m[0]:m[1]] != SkipMarker(int64(n)) || n <= 0 {
				t.Fatalf("marker %q", rest[m[0]:m[1]])
			}
			pos += n
		}
		rest = rest[m[1]:]
	}
	if pos != len(full) {
		t.Errorf("the terminal accounts for %d bytes of %d", pos, len(full))
	}
	msgs := r.model.Request(1).MessageTexts()
	if last := msgs[len(msgs)-1]; !strings.Contains(last, "last\n[output truncated; full output: /") || strings.Contains(last, "skipped") {
		t.Errorf("the model got %q", last[max(0, len(last)-200):])
	}
}

// TestCards: every kind of card, whole, as the client receives it, against
// its section of testdata/cards.txtar; and the model's text is the final
// update's rawOutput.
func TestCards(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		call     fakellm.Call
	}{
		{"exit-code", true, bashCall("c1", "echo oops >&2; exit 3")},
		{"exit-code-no-terminal", false, bashCall("c1", "echo oops >&2; exit 3")},
		{"signal", true, bashCall("c1", "kill -TERM $$")},
		{"error-result", true, bashCall("c1", "true", "workdir", "/nonexistent/dsh")},
		{"background", true, bashCall("c1", "true", "run_in_background", true)},
		{"unknown-tool", true, fakellm.Call{ID: "c1", Name: "nope", Args: map[string]any{"x": 1}}},
		{"bash-without-description", true, fakellm.Call{ID: "c1", Name: "bash", Args: map[string]any{"command": "echo hi"}}},
		{"bash-blank-command", true, fakellm.Call{ID: "c1", Name: "bash", Args: map[string]any{"command": " ", "description": "Nothing"}}},
		{"bash-timeout-not-a-number", true, fakellm.Call{ID: "c1", Name: "bash", Args: map[string]any{"command": "echo hi", "description": "Say hi", "timeoutMs": "5000"}}},
		{"bash-background-not-a-boolean", false, fakellm.Call{ID: "c1", Name: "bash", Args: map[string]any{"command": "echo hi", "description": "Say hi", "run_in_background": "yes"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.terminal, true, fakellm.Turn{Calls: []fakellm.Call{tc.call}}, fakellm.Turn{Text: "ok"})
			cwd := t.TempDir()
			sid := r.newSession(t, cwd)
			r.prompt(t, sid, "go")
			u := normalize(r.client.SessionUpdates(t, sid))
			goldenUpdates(t, "card-"+tc.name, u, cwd)
			// The tool's message, whatever notice may follow it.
			msgs := r.model.Request(1).MessageTexts()
			i := slices.IndexFunc(msgs, func(m string) bool { return strings.HasPrefix(m, "tool: ") })
			if got := u[len(u)-1]["rawOutput"]; i < 0 || "tool: "+fmt.Sprint(got) != msgs[i] {
				t.Errorf("rawOutput %q; the model got %q", got, msgs)
			}
		})
	}
}

// TestTerminalCapabilityPerSession: a session keeps the terminal capability
// the client announced before it was created, whatever a later initialize
// says.
func TestTerminalCapabilityPerSession(t *testing.T) {
	for _, first := range []bool{true, false} {
		r := newRig(t, first, true)
		r.model.SetScript(func(req fakellm.Request) fakellm.Turn {
			msgs := req.MessageTexts()
			if last := msgs[len(msgs)-1]; strings.HasPrefix(last, "user: ") {
				return fakellm.Turn{Calls: []fakellm.Call{bashCall("call-"+strings.TrimPrefix(last, "user: "), "echo hi")}}
			}
			return fakellm.Turn{Text: "ok"}
		})
		a := r.newSession(t, t.TempDir())
		r.initialize(t, !first)
		b := r.newSession(t, t.TempDir())
		r.prompt(t, a, "a")
		r.prompt(t, b, "b")
		for sid, terminal := range map[acp.SessionId]bool{a: first, b: !first} {
			u := normalize(r.client.SessionUpdates(t, sid))
			meta, _ := u[0]["_meta"].(map[string]any)
			_, hasInfo := meta["terminal_info"]
			_, hasContent := u[len(u)-1]["content"]
			if hasInfo != terminal || hasContent == terminal {
				t.Errorf("first initialize terminal=%v: session created with terminal=%v got %v", first, terminal, u)
			}
		}
	}
}

func TestBackgroundAndUnknownCallCards(t *testing.T) {
	r := newRig(t, true, true, fakellm.Turn{Calls: []fakellm.Call{
		bashCall("c1", "true", "run_in_background", true),
		{ID: "c2", Name: "nope", Args: map[string]any{"x": 1}},
		{ID: "c3", Name: "bash_output", Args: map[string]any{"task_id": "bash-1"}},
	}}, fakellm.Turn{Text: "ok"})
	sid := r.newSession(t, t.TempDir())
	r.prompt(t, sid, "go")
	var starts []map[string]any
	for _, u := range normalize(r.client.SessionUpdates(t, sid)) {
		if u["sessionUpdate"] == "tool_call" {
			starts = append(starts, u)
		}
	}
	want := mustJSON(t, `[
		{"sessionUpdate":"tool_call","toolCallId":"c1","title":"true","kind":"execute","status":"pending","rawInput":"true","content":[{"type":"content","content":{"type":"text","text":"Run true"}}]},
		{"sessionUpdate":"tool_call","toolCallId":"c2","title":"nope","kind":"other","status":"pending","rawInput":{"x":1}},
		{"sessionUpdate":"tool_call","toolCallId":"c3","title":"Read output from background task bash-1","kind":"execute","status":"pending","rawInput":"bash-1"}
	]`)
	if !reflect.DeepEqual(starts, want) {
		t.Errorf("starts %v", starts)
	}
}

func TestPermissions(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		asks   int
		ran    int
		result string
	}{
		{"allow once asks each time", allowOnce, 2, 2, "x\n"},
		{"allow always asks once", allowAlways, 1, 2, "x\n"},
		{"reject", rejectOnce, 2, 0, toolbash.RejectedText},
		{"cancelled outcome: no answer", "", 2, 0, unansweredText},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			cmd := "echo x >> " + marker + "; echo x"
			r := newRig(t, false, false, fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", cmd), bashCall("c2", cmd), {ID: "c3", Name: "bash_output", Args: map[string]any{"task_id": "bash-9"}}}}, fakellm.Turn{Text: "ok"})
			var sid acp.SessionId
			runningWhenAsked := false
			r.client.SetAnswer(func(req acp.RequestPermissionRequest) acp.RequestPermissionResponse {
				id := string(req.ToolCall.ToolCallId)
				runningWhenAsked = runningWhenAsked || slices.Contains(cardStatuses(r.client.SessionUpdates(t, sid), id), "in_progress")
				if tc.answer == "" {
					return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
				}
				return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(tc.answer))}
			})
			sid = r.newSession(t, t.TempDir())
			r.prompt(t, sid, "go")
			// A card waits as pending while the user is asked about it, and
			// is in progress only once its command runs.
			want := []string{"pending", "failed"}
			if tc.ran > 0 {
				want = []string{"pending", "in_progress", "completed"}
			}
			if got := cardStatuses(r.client.SessionUpdates(t, sid), "c1"); runningWhenAsked || !slices.Equal(got, want) {
				t.Errorf("card c1's statuses %q (in progress when asked: %v); want %q", got, runningWhenAsked, want)
			}
			asked := r.client.Asked()
			if len(asked) != tc.asks {
				t.Fatalf("asked %d times; want %d", len(asked), tc.asks)
			}
			p := asked[0]
			if p.ToolCall.ToolCallId != "c1" || *p.ToolCall.Title != cmd || len(p.Options) != 3 || p.Options[0].Kind != acp.PermissionOptionKindAllowOnce ||
				p.Options[1].Kind != acp.PermissionOptionKindAllowAlways || p.Options[2].Kind != acp.PermissionOptionKindRejectOnce {
				t.Errorf("request %+v", p)
			}
			b, _ := os.ReadFile(marker)
			if n := strings.Count(string(b), "x"); n != tc.ran {
				t.Errorf("ran %d times; want %d", n, tc.ran)
			}
			msgs := r.model.Request(1).MessageTexts()
			if got := msgs[len(msgs)-3]; got != "tool: "+tc.result {
				t.Errorf("model saw %q", got)
			}
			if got := msgs[len(msgs)-1]; got != `tool: unknown bash task "bash-9"` {
				t.Errorf("bash_output (never asks) gave %q", got)
			}
		})
	}
}

// TestCancel: session/cancel during a long command kills it, and the prompt
// says cancelled.
func TestCancel(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pid")
	syscall.Mkfifo(fifo, 0o600)
	r := newRig(t, true, true, fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", "echo $$ > "+fifo+"; exec sleep 30"), bashCall("c2", "echo never")}})
	sid := r.newSession(t, t.TempDir())
	done := r.promptAsync(sid, "go")
	pid := proctest.PidFromFIFO(t, fifo)
	r.cancel(t, sid)
	if got := testwait.Recv(t, done, "end of the cancelled prompt"); got != acp.StopReasonCancelled {
		t.Errorf("stop reason %s", got)
	}
	if proctest.Alive(pid) {
		t.Errorf("sleep %d survived the cancel", pid)
	}
	for _, u := range normalize(r.client.SessionUpdates(t, sid)) {
		if u["toolCallId"] == "c2" {
			t.Error("a call after the cancel was started")
		}
	}
	// The conversation stays valid: the next prompt's request has a tool
	// message for each call of the cancelled turn.
	r.model.SetTurns(fakellm.Turn{Text: "ok"})
	if got := r.prompt(t, sid, "again"); got != acp.StopReasonEndTurn {
		t.Fatalf("after cancel: %s", got)
	}
	msgs := r.model.Request(1).MessageTexts()
	want := []string{"tool: command aborted", "tool: cancelled by the user before it ran", "user: again"}
	if got := msgs[len(msgs)-3:]; !reflect.DeepEqual(got, want) {
		t.Errorf("history %q", got)
	}
}

// TestHistory: the model's next request holds the assistant's message, its
// text and tool calls, then a tool message for each call; a call the model
// gave no id gets one.
func TestHistory(t *testing.T) {
	r := newRig(t, false, true, fakellm.Turn{Text: "Looking.", Calls: []fakellm.Call{bashCall("c1", "echo one"), bashCall("", "echo two")}},
		fakellm.Turn{Text: "ok"})
	sid := r.newSession(t, t.TempDir())
	if got := r.prompt(t, sid, "go"); got != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %s", got)
	}
	type message struct {
		Role       string  `json:"role"`
		Content    *string `json:"content"`
		ToolCallID string  `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
	}
	var msgs []message
	for _, raw := range r.model.Request(1).Messages {
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) != 5 {
		t.Fatalf("%d messages, want system, user, assistant and two tool messages: %+v", len(msgs), msgs)
	}
	a := msgs[2]
	if a.Role != "assistant" || a.Content == nil || *a.Content != "Looking." || len(a.ToolCalls) != 2 {
		t.Fatalf("assistant message %+v", a)
	}
	if id := a.ToolCalls[1].ID; !regexp.MustCompile(`^call_[0-9a-f]{16}$`).MatchString(id) {
		t.Errorf("the call without an id got %q", id)
	}
	for i, tc := range a.ToolCalls {
		var args map[string]any
		if tc.Type != "function" || tc.Function.Name != "bash" || json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil {
			t.Errorf("tool call %d: %+v", i, tc)
		}
		if m := msgs[3+i]; m.Role != "tool" || m.ToolCallID != tc.ID || m.Content == nil || !strings.Contains(*m.Content, []string{"one", "two"}[i]) {
			t.Errorf("tool message %d: %+v for call %s", i, m, tc.ID)
		}
	}
	if a.ToolCalls[0].ID != "c1" {
		t.Errorf("the first call's id %q, want c1", a.ToolCalls[0].ID)
	}
}

// TestModelError: a model request the server refuses fails the prompt,
// saying what the server said.
func TestModelError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("OPENAI_API_KEY", "")
	for _, noKey := range []bool{false, true} {
		r := newRigWith(t, rigOptions{yolo: true, baseURL: srv.URL, noKey: noKey})
		sid := r.newSession(t, t.TempDir())
		_, err := r.promptErr(sid, "go")
		want := "the model request failed: chat completions: HTTP 401 Unauthorized: Incorrect API key provided"
		if err == nil || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("prompt error %v, want one saying %q", err, want)
		}
		// Without a key, the error says so: the likely cause.
		if said := strings.Contains(fmt.Sprint(err), "no API key is configured"); said != noKey {
			t.Errorf("no key %v: the error says there is none: %v (%v)", noKey, said, err)
		}
	}
}

// TestCancelModelRequest: a cancel while the model is thinking returns
// cancelled at once.
func TestCancelModelRequest(t *testing.T) {
	r := newRig(t, false, true, fakellm.Turn{Hold: true, Text: "never"})
	sid := r.newSession(t, t.TempDir())
	done := r.promptAsync(sid, "go")
	testwait.Recv(t, r.model.Arrived, "model request")
	r.cancel(t, sid)
	if got := testwait.Recv(t, done, "end of the cancelled prompt"); got != acp.StopReasonCancelled {
		t.Errorf("stop reason %s", got)
	}
}

// TestConcurrentSessions: two sessions with different cwds prompt at once;
// each runs in its own directory and sees only its own events.
func TestConcurrentSessions(t *testing.T) {
	r := newRig(t, false, true)
	r.model.SetScript(func(req fakellm.Request) fakellm.Turn {
		msgs := req.MessageTexts()
		last := msgs[len(msgs)-1]
		if strings.HasPrefix(last, "user: ") {
			return fakellm.Turn{Calls: []fakellm.Call{bashCall("call-"+strings.TrimPrefix(last, "user: "), "pwd")}}
		}
		return fakellm.Turn{Text: "ran in " + strings.TrimPrefix(last, "tool: ")}
	})
	dirs := []string{t.TempDir(), t.TempDir()}
	sids := []acp.SessionId{r.newSession(t, dirs[0]), r.newSession(t, dirs[1])}
	var done []<-chan acp.StopReason
	for i, sid := range sids {
		done = append(done, r.promptAsync(sid, "s"+strconv.Itoa(i)))
	}
	for i := range sids {
		if got := testwait.Recv(t, done[i], "end of the prompt of session "+strconv.Itoa(i)); got != acp.StopReasonEndTurn {
			t.Errorf("session %d: stop reason %s", i, got)
		}
	}
	for i, sid := range sids {
		u := r.client.SessionUpdates(t, sid)
		if got := agentText(u); got != "ran in "+dirs[i]+"\n" {
			t.Errorf("session %d: %q", i, got)
		}
		for _, x := range normalize(u) {
			if x["toolCallId"] != "call-s"+strconv.Itoa(i) {
				t.Errorf("session %d got an event of another session: %v", i, x)
			}
		}
	}
}

// TestNoticeReachesItsSession: a background task's notice is in its own
// session's next model request, and in no other's.
func TestNoticeReachesItsSession(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "go")
	syscall.Mkfifo(fifo, 0o600)
	r := newRig(t, false, true)
	r.model.SetScript(func(req fakellm.Request) fakellm.Turn {
		msgs := req.MessageTexts()
		if msgs[len(msgs)-1] == "user: start" {
			return fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", "read < "+fifo+"; exit 7", "run_in_background", true)}}
		}
		return fakellm.Turn{Text: "ok"}
	})
	ended := make(chan bash.Task, 1)
	defer r.exec.OnTaskDone(func(tk bash.Task) { ended <- tk })()
	a, b := r.newSession(t, t.TempDir()), r.newSession(t, t.TempDir())
	r.prompt(t, a, "start")
	testwait.WriteFIFO(t, fifo, "", "the background task") // it ends only after the turn
	testwait.Recv(t, ended, "end of the background task")
	r.prompt(t, b, "hello")
	r.prompt(t, a, "next")
	notice := "system: [background task notices; no reply needed]\nbackground task bash-1 finished [status: completed, exit code: 7]; read its output with bash_output"
	find := func(user string) []string {
		for _, req := range r.model.Requests() {
			if msgs := req.MessageTexts(); slices.Contains(msgs, "user: "+user) {
				return msgs
			}
		}
		t.Fatalf("no request with %q", user)
		return nil
	}
	if msgs := find("next"); !reflect.DeepEqual(msgs[len(msgs)-2:], []string{"user: next", notice}) {
		t.Errorf("session a's next request ends %q", msgs[len(msgs)-2:])
	}
	if msgs := find("hello"); strings.Contains(strings.Join(msgs, "\n"), "bash-1") {
		t.Errorf("the notice reached the other session: %q", msgs)
	}
	// Delivered once: a later request of a does not repeat it.
	r.prompt(t, a, "again")
	if n := strings.Count(strings.Join(find("again"), "\n"), "finished [status"); n != 1 {
		t.Errorf("the notice appears %d times in the history", n)
	}
}

func TestNewSessionNeedsAbsoluteCwd(t *testing.T) {
	r := newRig(t, false, true)
	err := testwait.Call("session/new", func(ctx context.Context) error {
		_, err := r.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: "relative/dir", McpServers: []acp.McpServer{}})
		return err
	})
	if err == nil {
		t.Error("a relative cwd was accepted")
	}
	if _, err := r.promptErr("sess-nope", "x"); err == nil {
		t.Error("a prompt to an unknown session was accepted")
	}
}

// TestTasksDieWithConnection: closing the connection kills the sessions'
// background tasks.
func TestTasksDieWithConnection(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pid")
	syscall.Mkfifo(fifo, 0o600)
	r := newRig(t, false, true, fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", "echo $$ > "+fifo+"; exec sleep 30", "run_in_background", true)}}, fakellm.Turn{Text: "ok"})
	sid := r.newSession(t, t.TempDir())
	r.prompt(t, sid, "go")
	pid := proctest.PidFromFIFO(t, fifo)
	if !proctest.Alive(pid) {
		t.Fatal("the background sleep is not running")
	}
	r.disconnect()
	if proctest.Alive(pid) {
		t.Errorf("background sleep %d outlived the connection", pid)
	}
}

// TestSystemPrompt: the session's directory fills %s, and the
// instructions (what the sandbox allows) follow the prompt.
func TestSystemPrompt(t *testing.T) {
	for _, tt := range []struct{ tmpl, cwd, instructions, want string }{
		{"in %s.", "/w", "", "in /w."},
		{"in %s.", "/w", "Commands run in a sandbox.", "in /w.\n\nCommands run in a sandbox."},
		{"fixed", "/w", "", "fixed"},
	} {
		if got := systemPrompt(tt.tmpl, tt.cwd, tt.instructions); got != tt.want {
			t.Errorf("systemPrompt(%q, %q, %q) = %q, want %q", tt.tmpl, tt.cwd, tt.instructions, got, tt.want)
		}
	}
}

// TestUnsandboxedCallAsks: a call that asks to run outside the sandbox is
// asked about with its own question (the command, the model's reason,
// allow once or reject), even with --yolo; a rejection reaches the model.
func TestUnsandboxedCallAsks(t *testing.T) {
	for _, answer := range []string{allowOnce, rejectOnce} {
		t.Run(answer, func(t *testing.T) {
			r := newRigWith(t, rigOptions{yolo: true, unsandboxed: true},
				fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", "echo out", "unsandboxed", true, "description", "write the user's file")}},
				fakellm.Turn{Text: "ok"})
			r.client.SetAnswer(func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
				return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(answer))}
			})
			sid := r.newSession(t, t.TempDir())
			r.prompt(t, sid, "go")
			asked := r.client.Asked()
			if len(asked) != 1 {
				t.Fatalf("asked %d times, want once (yolo does not answer it)", len(asked))
			}
			q := asked[0]
			content, _ := json.Marshal(q.ToolCall.Content)
			if !strings.HasPrefix(*q.ToolCall.Title, "Run OUTSIDE the sandbox: ") || len(q.Options) != 2 ||
				q.Options[0].Kind != acp.PermissionOptionKindAllowOnce || !strings.Contains(string(content), "write the user's file") ||
				!strings.Contains(*q.ToolCall.Title+string(content), "echo out") {
				t.Errorf("the question: %+v", q)
			}
			msgs := r.model.Request(1).MessageTexts()
			want := map[string]string{allowOnce: "tool: out\n", rejectOnce: "tool: " + toolbash.UnsandboxedDeclinedText}[answer]
			if got := msgs[len(msgs)-1]; got != want {
				t.Errorf("the model read %q, want %q", got, want)
			}
		})
	}
}
