//go:build linux

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const legacy = "2025-11-25"

type rig struct {
	exec *local.Executor
	srv  *Server
	cwd  string
	done chan bash.Task // every task that ends
}

func newRig(t *testing.T, o *Options) *rig {
	t.Helper()
	exec, err := local.New(&local.Options{SpillDir: t.TempDir(), Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if o == nil {
		o = &Options{}
	}
	if o.Cwd == "" {
		o.Cwd = t.TempDir()
	}
	srv, err := New(exec, o)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{exec: exec, srv: srv, cwd: o.Cwd, done: make(chan bash.Task, 100)}
	unsub := exec.OnTaskDone(func(tk bash.Task) { r.done <- tk })
	t.Cleanup(func() {
		unsub()
		srv.Close()
		if err := exec.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// connect runs one in-memory session of the server with a client and
// returns the client's session; the session ends with the test.
func (r *rig) connect(t *testing.T, copts *mcp.ClientOptions, roots ...string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ran := make(chan error, 1)
	go func() { ran <- r.srv.Run(context.Background(), st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v1"}, copts)
	for _, root := range roots {
		c.AddRoots(&mcp.Root{URI: "file://" + root})
	}
	cs := connectClient(t, c, ct)
	t.Cleanup(func() {
		cs.Close()
		if err := testwait.Recv(t, ran, "return of Run once the client closed"); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return cs
}

// connectClient connects c over the transport, within testwait.Limit.
func connectClient(t *testing.T, c *mcp.Client, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	cs, err := testwait.Reply("initialize", func(ctx context.Context) (*mcp.ClientSession, error) {
		return c.Connect(ctx, tr, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// call calls a tool; the test fails if it gets no result within
// testwait.Limit.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := callErr(cs, tool, args)
	if err != nil {
		t.Fatalf("CallTool %s: %v", tool, err)
	}
	return res
}

// callErr is call for a goroutine other than the test's: it returns the
// error instead of failing the test.
func callErr(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return testwait.Reply("tools/call "+tool, func(ctx context.Context) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	})
}

func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

func text(res *mcp.CallToolResult) string { return strings.Join(texts(res), "\n--\n") }

func bashArgs(cmd string, kv ...any) map[string]any {
	a := map[string]any{"command": cmd, "description": "Run a test command"}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1]
	}
	return a
}

func TestListTools(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, nil)
	res, err := testwait.Reply("tools/list", func(ctx context.Context) (*mcp.ListToolsResult, error) {
		return cs.ListTools(ctx, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := (&toolbash.Tools{}).List()
	if len(res.Tools) != len(want) {
		t.Fatalf("%d tools", len(res.Tools))
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	for _, w := range want {
		g := got[w.Name]
		if g == nil || g.Description != w.Description || !sameJSON(t, g.InputSchema, w.InputSchema) {
			t.Errorf("tool %s differs from its definition", w.Name)
		}
	}
	a := got["bash"].Annotations
	if a == nil || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint || a.ReadOnlyHint {
		t.Errorf("bash annotations %+v", a)
	}
	if a := got["bash_output"].Annotations; !a.ReadOnlyHint {
		t.Errorf("bash_output annotations %+v", a)
	}
}

// sameJSON reports whether a and b marshal to the same JSON value.
func sameJSON(t *testing.T, a, b any) bool {
	var va, vb any
	for _, p := range []struct {
		in  any
		out *any
	}{{a, &va}, {b, &vb}} {
		raw, err := json.Marshal(p.in)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(raw, p.out)
	}
	return reflect.DeepEqual(va, vb)
}

func TestCalls(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, nil)
	tests := []struct {
		name  string
		tool  string
		args  map[string]any
		want  string
		isErr bool
	}{
		{"foreground", "bash", bashArgs("echo hi"), "hi\n", false},
		{"failing command", "bash", bashArgs("echo no >&2; exit 3"), "[stderr]\nno\n[exit code: 3]", false},
		{"timeout", "bash", bashArgs("sleep 30", "timeoutMs", 200), "(no output)\n[timed out after 200ms]\n[killed by signal: SIGTERM]", false},
		{"bad argument", "bash", bashArgs("true", "timeoutMs", -5), "invalid timeoutMs: expected a positive number, got -5", true},
		{"missing argument", "bash", map[string]any{"command": "true"}, "missing required argument description", true},
		{"unknown task", "bash_output", map[string]any{"task_id": "bash-99"}, `unknown bash task "bash-99"`, true},
		{"still serving", "bash", bashArgs("echo again"), "again\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, tc.tool, tc.args)
			if text(res) != tc.want || res.IsError != tc.isErr {
				t.Errorf("got %q (isError %v); want %q", text(res), res.IsError, tc.want)
			}
		})
	}
}

func TestBackgroundAndNotice(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, nil)
	fifo := filepath.Join(t.TempDir(), "go")
	syscall.Mkfifo(fifo, 0o600)
	if got := text(call(t, cs, "bash", bashArgs("read < "+fifo+"; echo done", "run_in_background", true))); got != "started background task bash-1" {
		t.Fatalf("start: %q", got)
	}
	if got := text(call(t, cs, "bash_output", map[string]any{"task_id": "bash-1"})); got != "(no new output)\n[status: running]" {
		t.Errorf("poll: %q", got)
	}
	if got := text(call(t, cs, "bash", bashArgs("sleep 30", "run_in_background", true))); got != "started background task bash-2" {
		t.Fatalf("start: %q", got)
	}
	if got := text(call(t, cs, "bash_kill", map[string]any{"task_id": "bash-2"})); got != "killed background task bash-2" { // the kill said it: no notice
		t.Errorf("kill: %q", got)
	}
	testwait.WriteFIFO(t, fifo, "", "background task bash-1")
	for {
		if testwait.Recv(t, r.done, "end of task bash-1").ID == "bash-1" {
			break
		}
	}
	res := call(t, cs, "bash", bashArgs("echo next"))
	want := []string{"next\n", "\n\n[background task notices; no reply needed]\nbackground task bash-1 finished [status: completed, exit code: 0]; read its output with bash_output"}
	if got := texts(res); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("next call: %q; want %q", got, want)
	}
	if got := texts(call(t, cs, "bash", bashArgs("echo again"))); len(got) != 1 {
		t.Errorf("the notice came twice: %q", got)
	}
	if got := text(call(t, cs, "bash_output", map[string]any{"task_id": "bash-1"})); got != "done\n[status: completed, exit code: 0]" {
		t.Errorf("read: %q", got)
	}
}

// TestRootsCwd: the session cwd comes from the client's first file:// root,
// for both protocol eras, the command runs once, and without roots the
// server default applies.
func TestRootsCwd(t *testing.T) {
	for _, proto := range []string{"new", legacy} {
		t.Run(proto, func(t *testing.T) {
			o := &Options{}
			if proto == legacy {
				o.SupportedProtocolVersions = []string{legacy}
			}
			r := newRig(t, o)
			root, other := t.TempDir(), t.TempDir()
			count := filepath.Join(t.TempDir(), "runs")
			cs := r.connect(t, nil, root, other)
			if v := cs.InitializeResult().ProtocolVersion; (proto == legacy) != (v == legacy) {
				t.Fatalf("negotiated %s", v)
			}
			res := call(t, cs, "bash", bashArgs("echo x >> "+count+"; pwd"))
			if text(res) != root+"\n" {
				t.Errorf("cwd %q; want %q", text(res), root)
			}
			if b, _ := os.ReadFile(count); string(b) != "x\n" {
				t.Errorf("the command ran %d times", strings.Count(string(b), "x"))
			}
			if got := text(call(t, cs, "bash", bashArgs("pwd"))); got != root+"\n" {
				t.Errorf("second call cwd %q", got)
			}
			if got := text(call(t, cs, "bash", bashArgs("pwd", "workdir", "sub"))); got != "working directory "+filepath.Join(root, "sub")+" does not exist" {
				t.Errorf("relative workdir: %q", got)
			}
			noRoots := r.connect(t, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			if got := text(call(t, noRoots, "bash", bashArgs("pwd"))); got != r.cwd+"\n" {
				t.Errorf("no roots: %q; want %q", got, r.cwd)
			}
			empty := r.connect(t, nil) // roots capability, but no roots
			if got := text(call(t, empty, "bash", bashArgs("pwd"))); got != r.cwd+"\n" {
				t.Errorf("empty roots: %q; want %q", got, r.cwd)
			}
		})
	}
}

func TestRootsChanged(t *testing.T) {
	r := newRig(t, &Options{SupportedProtocolVersions: []string{legacy}})
	first, second := t.TempDir(), t.TempDir()
	st, ct := mcp.NewInMemoryTransports()
	ran := make(chan error, 1)
	go func() { ran <- r.srv.Run(context.Background(), st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	c.AddRoots(&mcp.Root{URI: "file://" + first})
	cs := connectClient(t, c, ct)
	defer func() { cs.Close(); testwait.Recv(t, ran, "return of Run once the client closed") }()
	if got := text(call(t, cs, "bash", bashArgs("pwd"))); got != first+"\n" {
		t.Fatalf("cwd %q", got)
	}
	c.AddRoots(&mcp.Root{URI: "file://" + second})
	c.RemoveRoots("file://" + first)
	// The notification is asynchronous: wait until the server has heard it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := text(call(t, cs, "bash", bashArgs("pwd")))
		if got == second+"\n" {
			break
		}
		if got != first+"\n" || time.Now().After(deadline) {
			t.Fatalf("after the roots changed: %q", got)
		}
	}
}

func TestLogNotification(t *testing.T) {
	r := newRig(t, &Options{SupportedProtocolVersions: []string{legacy}})
	logs := make(chan string, 10)
	cs := r.connect(t, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		logs <- fmt.Sprint(req.Params.Data)
	}})
	err := testwait.Call("logging/setLevel", func(ctx context.Context) error {
		return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"})
	})
	if err != nil {
		t.Fatal(err)
	}
	call(t, cs, "bash", bashArgs("exit 5", "run_in_background", true))
	if got := testwait.Recv(t, logs, "log notification"); got != "background task bash-1 finished [status: completed, exit code: 5]; read its output with bash_output" {
		t.Errorf("log %q", got)
	}
}

// TestSessionEndKillsTasks: a session's running tasks die with it; another
// session's tasks live on.
func TestSessionEndKillsTasks(t *testing.T) {
	r := newRig(t, nil)
	keep := r.connect(t, nil)
	call(t, keep, "bash", bashArgs("sleep 30", "run_in_background", true)) // bash-1
	st, ct := mcp.NewInMemoryTransports()
	ran := make(chan error, 1)
	go func() { ran <- r.srv.Run(context.Background(), st) }()
	cs := connectClient(t, mcp.NewClient(&mcp.Implementation{Name: "c"}, nil), ct)
	call(t, cs, "bash", bashArgs("sleep 30", "run_in_background", true)) // bash-2
	cs.Close()
	testwait.Recv(t, ran, "return of Run once the client closed")
	if tk, _ := r.exec.Get(context.Background(), "bash-2"); tk.Status != bash.StatusKilled {
		t.Errorf("the ended session's task: %+v", tk)
	}
	if tk, _ := r.exec.Get(context.Background(), "bash-1"); tk.Status != bash.StatusRunning {
		t.Errorf("the other session's task: %+v", tk)
	}
}

// TestHTTPSessions: two clients over streamable HTTP see only their own
// tasks, and the token rule holds.
func TestHTTPSessions(t *testing.T) {
	r := newRig(t, nil)
	hs := httptest.NewServer(r.srv.HTTPHandler(&HTTPOptions{Token: "s3cret"}))
	defer hs.Close()
	connect := func(token string) (*mcp.ClientSession, error) {
		hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
		c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
		return testwait.Reply("initialize", func(ctx context.Context) (*mcp.ClientSession, error) {
			return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hc}, nil)
		})
	}
	for _, bad := range []string{"", "wrong"} {
		if cs, err := connect(bad); err == nil {
			cs.Close()
			t.Errorf("token %q: connected", bad)
		}
		req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(`{}`))
		if bad != "" {
			req.Header.Set("Authorization", "Bearer "+bad)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("token %q: %v", bad, err)
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: %v", bad, resp.Status)
		}
		resp.Body.Close()
	}
	a, err := connect("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := connect("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	results := make(chan string, 2)
	for _, cs := range []*mcp.ClientSession{a, b} {
		go func() {
			res, err := callErr(cs, "bash", bashArgs("sleep 30", "run_in_background", true))
			if err != nil {
				results <- err.Error()
				return
			}
			results <- text(res)
		}()
	}
	got := []string{testwait.Recv(t, results, "start of a background task"), testwait.Recv(t, results, "start of a background task")}
	if !(got[0] == "started background task bash-1" && got[1] == "started background task bash-2" ||
		got[1] == "started background task bash-1" && got[0] == "started background task bash-2") {
		t.Fatalf("starts %q", got)
	}
	aTask, bTask := "bash-1", "bash-2"
	if o, _ := r.exec.OwnerOf(context.Background(), "bash-1"); o != r.ownerOf(t, a) {
		aTask, bTask = bTask, aTask
	}
	for _, tc := range []struct {
		cs   *mcp.ClientSession
		tool string
		id   string
	}{{a, "bash_output", bTask}, {a, "bash_kill", bTask}, {b, "bash_output", aTask}, {b, "bash_kill", aTask}} {
		res := call(t, tc.cs, tc.tool, map[string]any{"task_id": tc.id})
		if !res.IsError || text(res) != "task "+tc.id+" belongs to another session" {
			t.Errorf("%s of the other's %s: %q", tc.tool, tc.id, text(res))
		}
	}
	if got := text(call(t, a, "bash_kill", map[string]any{"task_id": aTask})); got != "killed background task "+aTask {
		t.Errorf("own kill: %q", got)
	}
	if tk, _ := r.exec.Get(context.Background(), bash.TaskID(bTask)); tk.Status != bash.StatusRunning {
		t.Errorf("the other session's task: %+v", tk)
	}
}

// ownerOf finds the owner token of a client's session by the task it runs.
func (r *rig) ownerOf(t *testing.T, cs *mcp.ClientSession) string {
	r.srv.mu.Lock()
	defer r.srv.mu.Unlock()
	for ss, st := range r.srv.sessions {
		if ss.ID() == cs.ID() {
			return st.owner
		}
	}
	t.Fatalf("no server session %s", cs.ID())
	return ""
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.token != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.rt.RoundTrip(req)
}

func TestListenAddr(t *testing.T) {
	tests := []struct {
		addr  string
		token bool
		want  string
		err   bool
	}{
		{":8080", false, "127.0.0.1:8080", false},
		{"127.0.0.1:0", false, "127.0.0.1:0", false},
		{"localhost:9", false, "localhost:9", false},
		{"[::1]:9", false, "[::1]:9", false},
		{"0.0.0.0:9", false, "", true},
		{"192.168.1.5:9", false, "", true},
		{"example.com:9", false, "", true},
		{"0.0.0.0:9", true, "0.0.0.0:9", false},
		{"nonsense", false, "", true},
	}
	for _, tc := range tests {
		got, err := ListenAddr(tc.addr, tc.token)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ListenAddr(%q, %v) = %q, %v", tc.addr, tc.token, got, err)
		}
	}
}

// TestProgress: a call with a progress token sees the command's output as
// progress notifications while it runs, up to its last byte.
func TestProgress(t *testing.T) {
	r := newRig(t, nil)
	type note struct {
		progress float64
		message  string
	}
	notes := make(chan note, 100)
	cs := r.connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		if req.Params.ProgressToken == "tok-1" {
			notes <- note{req.Params.Progress, req.Params.Message}
		}
	}})
	fifo := filepath.Join(t.TempDir(), "go")
	syscall.Mkfifo(fifo, 0o600)
	params := &mcp.CallToolParams{Name: "bash", Arguments: bashArgs("echo building; read < " + fifo + "; echo linking; echo done")}
	params.SetProgressToken("tok-1")
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := testwait.Reply("tools/call bash", func(ctx context.Context) (*mcp.CallToolResult, error) {
			return cs.CallTool(ctx, params)
		})
		done <- result{res, err}
	}()
	// The command is blocked on the FIFO: this comes live.
	if n := testwait.Recv(t, notes, "progress notification while the command ran"); n.message != "building" || n.progress != float64(len("building\n")) {
		t.Errorf("first progress %+v", n)
	}
	testwait.WriteFIFO(t, fifo, "", "the command")
	got := testwait.Recv(t, done, "result of the call")
	if got.err != nil {
		t.Fatal(got.err)
	}
	if text(got.res) != "building\nlinking\ndone\n" {
		t.Errorf("result %q", text(got.res))
	}
	// The SDK client hands notifications to the handler asynchronously, so
	// the last ones may be handled after CallTool returned.
	total := float64(len("building\nlinking\ndone\n"))
	for {
		n := testwait.Recv(t, notes, "last progress notification")
		if n.progress > total {
			t.Fatalf("progress %v past the output's %v bytes", n.progress, total)
		}
		if n.progress == total {
			if n.message != "done" {
				t.Errorf("last progress message %q", n.message)
			}
			return
		}
	}
}

func TestLastLine(t *testing.T) {
	for in, want := range map[string]string{
		"a\nb\n":                 "b",
		"a\nb\n\n  \n":           "b",
		"  one  ":                "one",
		"":                       "",
		strings.Repeat("é", 300): strings.Repeat("é", 199) + "…",
		"x\r\nprogress 50%\r\n":  "progress 50%",
	} {
		if got := lastLine(in); got != want {
			t.Errorf("lastLine(%q) = %q; want %q", in, got, want)
		}
	}
}
