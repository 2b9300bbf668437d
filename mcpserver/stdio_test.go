//go:build linux

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"golang.org/x/sys/unix"
)

// wire is a client that speaks raw JSON-RPC lines to ServeStdio over
// pipes, so that it can also send what no SDK client would. Its reads are
// bounded: a reply that does not come fails the test within
// testwait.Limit, naming the requests still unanswered.
type wire struct {
	t      *testing.T
	in     *io.PipeWriter // the server's stdin
	out    *testwait.Lines
	outR   *io.PipeReader // the server's stdout
	served chan error
	once   sync.Once
	err    error

	mu      sync.Mutex
	pending []sent // the lines sent that await a reply, oldest first
}

// sent is a line sent that awaits a reply: a request (id set), or a line
// that is none, which the server answers with an error of id null.
type sent struct {
	id    string // the request's id as JSON; "" for a line that is not a request
	label string
}

// wait returns what ServeStdio returned, once it has.
func (w *wire) wait(t testing.TB) error {
	t.Helper()
	w.once.Do(func() { w.err = testwait.Recv(t, w.served, "return of ServeStdio") })
	return w.err
}

func (r *rig) wire(t *testing.T, ctx context.Context, opts *StdioOptions) *wire {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &wire{t: t, in: inW, out: testwait.NewLines(outR), outR: outR, served: make(chan error, 1)}
	go func() {
		w.served <- r.srv.ServeStdio(ctx, inR, outW, opts)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		w.wait(t)
	})
	return w
}

func (w *wire) send(lines ...string) {
	w.t.Helper()
	for _, l := range lines {
		for _, one := range strings.Split(l, "\n") {
			w.note(one)
		}
		if _, err := io.WriteString(w.in, l+"\n"); err != nil {
			w.t.Fatalf("write %q: %v", l, err)
		}
	}
}

// note records a line sent that awaits a reply (any but a notification).
func (w *wire) note(line string) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	s := sent{label: fmt.Sprintf("the line %.60q", line)}
	if json.Unmarshal([]byte(line), &m) == nil && m.Method != "" {
		if m.ID == nil {
			return // a notification
		}
		s = sent{id: string(m.ID), label: fmt.Sprintf("request %s (%s)", m.ID, m.Method)}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, s)
}

// answered drops the line a reply with this id answers: the request of
// that id; for id null, the latest line that is not a request, else the
// latest line (a request the server could not read whole). The latest,
// because the tests wait for the reply to the line they sent last: an
// older line still unanswered lost its reply.
func (w *wire) answered(id json.RawMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := -1
	for j := len(w.pending) - 1; j >= 0; j-- {
		if s := w.pending[j]; s.id == string(id) || string(id) == "null" && s.id == "" {
			i = j
			break
		}
	}
	if i < 0 && string(id) == "null" {
		i = len(w.pending) - 1
	}
	if i >= 0 {
		w.pending = append(w.pending[:i], w.pending[i+1:]...)
	}
}

// awaited says what the client waits for, for a failure message: the
// reply to the latest line sent, and those still missing before it.
func (w *wire) awaited() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.pending)
	if n == 0 {
		return "message from the server"
	}
	what := "reply to " + w.pending[n-1].label
	if n > 1 {
		var older []string
		for _, s := range w.pending[:n-1] {
			older = append(older, s.label)
		}
		what += " (nor yet to " + strings.Join(older, ", ") + ")"
	}
	return what
}

// msg is a JSON-RPC message as the client reads it.
type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// next reads the next message that is not a notification.
func (w *wire) next(t testing.TB) msg {
	t.Helper()
	for {
		line, err := w.out.Next(t, w.awaited())
		if err != nil {
			t.Fatalf("read: %v, waiting for a %s; %s", err, w.awaited(), w.out.Last())
		}
		var m msg
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %q", line)
		}
		if m.Method == "" {
			w.answered(m.ID)
			return m
		}
	}
}

// rest reads everything until the server closes its output.
func (w *wire) rest(t testing.TB) []msg {
	t.Helper()
	var all []msg
	for {
		line, err := w.out.Next(t, "end of the server's output (still awaited: "+w.awaited()+")")
		if err != nil {
			return all
		}
		var m msg
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == "" {
			w.answered(m.ID)
			all = append(all, m)
		}
	}
}

const initLines = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wire","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}`

func (w *wire) initialize() {
	w.t.Helper()
	w.send(initLines)
	if m := w.next(w.t); string(m.ID) != `"init"` || m.Error != nil {
		w.t.Fatalf("initialize: %+v", m)
	}
}

func toolCall(id int, command string) string {
	args, _ := json.Marshal(bashArgs(command))
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"bash","arguments":%s}}`, id, args)
}

// callText is the text of a tools/call result.
func callText(t *testing.T, m msg) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		t.Fatalf("not a tool result: %+v", m)
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "")
}

// TestStdioMalformedLines: a line that is not a JSON-RPC message is
// answered with a JSON-RPC error, and the session goes on serving.
func TestStdioMalformedLines(t *testing.T) {
	r := newRig(t, nil)
	w := r.wire(t, context.Background(), &StdioOptions{MaxLineBytes: 4096})
	w.initialize()
	tests := []struct {
		name, line string
		code       int
		id         string
	}{
		{"not JSON", `hello`, -32700, "null"},
		{"empty batch", `[]`, -32600, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":90,"method":"ping"}]`, -32600, "null"},
		{"NaN", `{"jsonrpc":"2.0","id":91,"method":"ping","params":{"x":NaN}}`, -32700, "null"},
		{"truncated object", `{"jsonrpc":"2.0","id":92,"method":"pi`, -32700, "null"},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":93,"method":"ping"}`, -32600, "93"},
		{"no jsonrpc", `{"id":"x94","method":"ping"}`, -32600, `"x94"`},
		{"neither request nor response", `{"jsonrpc":"2.0"}`, -32600, "null"},
		{"a number", `42`, -32600, "null"},
		{"too long", `{"jsonrpc":"2.0","id":95,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`, -32600, "null"},
	}
	for i, tc := range tests {
		// The ping goes right behind the bad line: the bad line is
		// answered before the next line is read, so an answer that never
		// comes shows at once as the ping's answer in its place.
		ok := t.Run(tc.name, func(t *testing.T) {
			w.send(tc.line)
			w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 1000+i))
			m := w.next(t)
			if m.Error == nil || m.Error.Code != tc.code || string(m.ID) != tc.id {
				t.Fatalf("answer %+v (id %s); want code %d, id %s", m.Error, m.ID, tc.code, tc.id)
			}
			if m := w.next(t); string(m.ID) != strconv.Itoa(1000+i) || m.Error != nil {
				t.Fatalf("ping after it: %+v", m)
			}
		})
		if !ok {
			return // the wire is out of step: later answers would be misread
		}
	}
	w.send(toolCall(7, "echo still serving"))
	if got := callText(t, w.next(t)); got != "still serving\n" {
		t.Errorf("tool call after the bad lines: %q", got)
	}
}

// TestStdioCancelledRequest: a request the client cancels gets no response
// at all, and its command is aborted.
func TestStdioCancelledRequest(t *testing.T) {
	r := newRig(t, nil)
	w := r.wire(t, context.Background(), nil)
	w.initialize()
	dir := t.TempDir()
	sync, pidFile := filepath.Join(dir, "sync"), filepath.Join(dir, "pid")
	mkfifo(t, sync)
	w.send(toolCall(7, fmt.Sprintf("sleep 300 & echo $! > %s; echo > %s; wait", pidFile, sync)))
	reached(t, sync)
	w.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user pressed Esc"}}`)
	pid := proctest.PidFromFile(t, pidFile)
	if proctest.WaitExit(pid, time.Minute) != nil {
		t.Fatalf("the cancelled command's sleep %d is still alive", pid)
	}
	w.in.Close() // every answer the server still owes comes before its output ends
	for _, m := range w.rest(t) {
		if string(m.ID) == "7" {
			t.Errorf("the cancelled request got a response: %s", m.Result)
		}
	}
	if err := w.wait(t); err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}

// TestStdioEOFAbortsAndAnswers: when the client closes stdin, every call in
// flight is aborted at once, every request already written is answered,
// the session's background tasks die, and ServeStdio returns.
func TestStdioEOFAbortsAndAnswers(t *testing.T) {
	r := newRig(t, nil)
	w := r.wire(t, context.Background(), nil)
	w.initialize()
	dir := t.TempDir()
	sync, fg, bg := filepath.Join(dir, "sync"), filepath.Join(dir, "fg"), filepath.Join(dir, "bg")
	mkfifo(t, sync)
	w.send(toolCall(1, fmt.Sprintf("sleep 300 & echo $! > %s; disown; echo started", bg)))
	if got := callText(t, w.next(t)); !strings.HasPrefix(got, "started\n[still running in background as task") {
		t.Fatalf("background start: %q", got)
	}
	w.send(toolCall(2, fmt.Sprintf("sleep 300 & echo $! > %s; echo > %s; wait", fg, sync)))
	reached(t, sync)
	w.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	w.in.Close()
	answered := map[string]msg{}
	for _, m := range w.rest(t) {
		answered[string(m.ID)] = m
	}
	for _, id := range []string{"2", "3", "4"} {
		if _, ok := answered[id]; !ok {
			t.Errorf("request %s got no answer", id)
		}
	}
	if m, ok := answered["2"]; ok && callText(t, m) != "command aborted" {
		t.Errorf("the call in flight: %q", callText(t, m))
	}
	for _, f := range []string{fg, bg} {
		if pid := proctest.PidFromFile(t, f); proctest.WaitExit(pid, time.Minute) != nil {
			t.Errorf("process %d outlived the client", pid)
		}
	}
	if err := w.wait(t); err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}

// TestStdioClientStoppedReading: a failed write means the client is gone:
// the session ends and its tasks die, though stdin is still open.
func TestStdioClientStoppedReading(t *testing.T) {
	r := newRig(t, nil)
	w := r.wire(t, context.Background(), nil)
	w.initialize()
	pidFile := filepath.Join(t.TempDir(), "pid")
	w.send(toolCall(1, fmt.Sprintf("sleep 300 & echo $! > %s; echo started", pidFile)))
	w.next(t)
	w.outR.Close() // the client's reader is gone; its writer is not
	w.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if pid := proctest.PidFromFile(t, pidFile); proctest.WaitExit(pid, time.Minute) != nil {
		t.Errorf("task process %d outlived its client", pid)
	}
	w.wait(t)
}

// TestStdioShutdownAbortsCalls: when ctx ends (SIGTERM in dsh-bash), a call
// in flight is aborted at once instead of being waited for.
func TestStdioShutdownAbortsCalls(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := r.wire(t, ctx, nil)
	w.initialize()
	dir := t.TempDir()
	sync, pidFile := filepath.Join(dir, "sync"), filepath.Join(dir, "pid")
	mkfifo(t, sync)
	w.send(toolCall(1, fmt.Sprintf("trap '' TERM; sleep 300 & echo $! > %s; echo > %s; wait", pidFile, sync)))
	reached(t, sync)
	cancel()
	w.wait(t)
	if pid := proctest.PidFromFile(t, pidFile); proctest.WaitExit(pid, time.Minute) != nil {
		t.Errorf("process %d outlived the shutdown", pid)
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
}

// reached waits until a command has written a line to the FIFO.
func reached(t *testing.T, fifo string) {
	t.Helper()
	testwait.ReadFIFO(t, fifo, "sign that the command runs")
}

// signalWriter is a pipe's write end that tells when a write of more than
// min bytes starts.
type signalWriter struct {
	*os.File
	min     int
	writing chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if len(p) > w.min {
		select {
		case w.writing <- struct{}{}:
		default:
		}
	}
	return w.File.Write(p)
}

// TestStdioShutdownWithStuckClient: a client that stopped reading its
// stdout (a pipe, full) must not keep the server from stopping: a write
// blocked on it fails when the server shuts down.
func TestStdioShutdownWithStuckClient(t *testing.T) {
	r := newRig(t, nil)
	pr, pw, err := os.Pipe() // pollable: writes can have deadlines
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	// Not through Fd, which would put the pipe in blocking mode.
	raw, err := pw.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) { _, err = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 4096) })
	if err != nil {
		t.Fatal(err)
	}
	out := &signalWriter{File: pw, min: 4096, writing: make(chan struct{}, 1)}
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.srv.ServeStdio(ctx, inR, out, nil) }()
	fmt.Fprintln(inW, initLines)
	fmt.Fprintln(inW, toolCall(1, "seq 3000"))           // an answer bigger than the pipe
	testwait.Recv(t, out.writing, "write of the answer") // it is being written; nobody reads
	cancel()
	testwait.Recv(t, served, "return of ServeStdio, stuck on a client that does not read")
}
