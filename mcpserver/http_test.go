//go:build linux

package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testToken = "test-token-0123456789abcdef"

// exitWait bounds waiting for a process that must die: only a test that
// would otherwise hang reaches it.
const exitWait = time.Minute

// httpClient is the tests' client of raw HTTP requests: a request gets
// its whole response within testwait.Limit, or fails.
var httpClient = &http.Client{Timeout: testwait.Limit}

// httpRig is a rig served over streamable HTTP on loopback.
type httpRig struct {
	*rig
	h   *HTTPHandler
	url string
}

func newHTTPRig(t *testing.T, opts *HTTPOptions) *httpRig {
	t.Helper()
	r := newRig(t, nil)
	h := r.srv.HTTPHandler(opts)
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		hs.Close()
	})
	return &httpRig{rig: r, h: h, url: hs.URL}
}

// dropper is a client's network that the test can cut, as when a client
// dies: every connection is closed and no new one can be made.
type dropper struct {
	mu    sync.Mutex
	conns []net.Conn
	down  bool
}

func (d *dropper) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, errors.New("the client is gone")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *dropper) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

func (d *dropper) restore() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = false
}

// client connects an SDK client with the token over d (nil: a plain
// network); sse false disables its standalone GET stream.
func (r *httpRig) client(t *testing.T, d *dropper, sse bool) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	if d != nil {
		tr.DialContext = d.dial
	}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: bearer{testToken, tr}}
	cs := connectClient(t, mcp.NewClient(&mcp.Implementation{Name: "c"}, nil),
		&mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: hc, DisableStandaloneSSE: !sse})
	t.Cleanup(func() { cs.Close() })
	return cs
}

// pidOf runs command (which must start with a shell that writes its pid to
// the fifo $F and then execs) through do, and returns that pid once written.
func pidOf(t *testing.T, do func(fifo string)) int {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	do(fifo)
	return proctest.PidFromFIFO(t, fifo)
}

// background starts a background sleep in cs and returns its pid.
func background(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	return pidOf(t, func(fifo string) {
		got := text(call(t, cs, "bash", bashArgs("echo $$ > "+fifo+"; exec sleep 300", "run_in_background", true)))
		if !strings.HasPrefix(got, "started background task ") {
			t.Fatalf("start: %q", got)
		}
	})
}

// foreground starts a foreground call in cs that outlives the test unless
// aborted (it ignores SIGTERM), and returns its pid and the call's end
// (receive it with testwait.Recv: the call itself has no deadline).
func foreground(t *testing.T, cs *mcp.ClientSession) (int, <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	pid := pidOf(t, func(fifo string) {
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash",
				Arguments: bashArgs("trap '' TERM; echo $$ > "+fifo+"; sleep 300", "timeoutMs", 600000)})
			done <- err
		}()
	})
	return pid, done
}

func waitExit(t *testing.T, what string, pid int) {
	t.Helper()
	if err := proctest.WaitExit(pid, exitWait); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// state is what the handler knows of a session.
func (r *httpRig) state(id string) (inflight int, counting, ending, ok bool) {
	hs := r.h.sessions
	hs.mu.Lock()
	defer hs.mu.Unlock()
	t := hs.byID[id]
	if t == nil {
		return 0, false, false, false
	}
	return t.inflight, t.timer != nil, t.ending, true
}

// waitIdle waits until session id has no request in flight.
func (r *httpRig) waitIdle(t *testing.T, id string) {
	t.Helper()
	hs := r.h.sessions
	idle := make(chan struct{}, 1)
	hs.mu.Lock()
	hs.onIdle = func(string) {
		select {
		case idle <- struct{}{}:
		default:
		}
	}
	hs.mu.Unlock()
	for {
		if n, _, _, _ := r.state(id); n == 0 {
			return
		}
		testwait.Recv(t, idle, "end of the requests in flight of session "+id)
	}
}

// post sends one JSON-RPC message with the given headers.
func post(t *testing.T, url, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initialize = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTPAuth: every request needs the token, the scheme in any case; a
// handler given neither a token nor NoAuth refuses everyone.
func TestHTTPAuth(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken})
	for _, tc := range []struct {
		auth string
		ok   bool
	}{
		{"", false},
		{"Bearer wrong", false},
		{"Bearer " + testToken[:len(testToken)-1], false},
		{"Bearer " + testToken + "x", false},
		{"Basic " + testToken, false},
		{testToken, false},
		{"Bearer", false},
		{"Bearer " + testToken, true},
		{"bearer " + testToken, true},
		{"BEARER " + testToken, true},
		{"Bearer   " + testToken, true},
	} {
		resp := post(t, r.url, initialize, "Authorization", tc.auth)
		if got := resp.StatusCode != http.StatusUnauthorized; got != tc.ok {
			t.Errorf("Authorization %q: %s", tc.auth, resp.Status)
		}
		if !tc.ok && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer realm="dsh-bash"`) {
			t.Errorf("Authorization %q: WWW-Authenticate %q", tc.auth, resp.Header.Get("WWW-Authenticate"))
		}
		// The body says what to send, and whether what was sent was wrong.
		if body, _ := io.ReadAll(resp.Body); !tc.ok && (!strings.Contains(string(body), "Authorization: Bearer TOKEN") ||
			strings.Contains(string(body), "is not this server's") != (tc.auth != "")) {
			t.Errorf("Authorization %q: body %q", tc.auth, body)
		}
	}
	for _, o := range []*HTTPOptions{nil, {}} {
		rr := newHTTPRig(t, o)
		if resp := post(t, rr.url, initialize); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no token, no NoAuth: %s", resp.Status)
		}
	}
	if resp := post(t, newHTTPRig(t, &HTTPOptions{NoAuth: true}).url, initialize); resp.StatusCode != http.StatusOK {
		t.Errorf("NoAuth: %s", resp.Status)
	}
}

// TestHTTPSessionCap: past MaxSessions a new session is refused with 503
// and a JSON-RPC error naming the limit; open sessions go on, and ending
// one frees its place.
func TestHTTPSessionCap(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, MaxSessions: 2})
	a := r.client(t, nil, true)
	b := r.client(t, nil, false)
	resp := post(t, r.url, initialize, "Authorization", "Bearer "+testToken)
	body, _ := io.ReadAll(resp.Body)
	var msg struct {
		ID    int
		Error struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal(body, &msg); err != nil || resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get("Content-Type") != "application/json" || msg.ID != 7 || msg.Error.Code != codeServerBusy ||
		!strings.Contains(msg.Error.Message, "already has 2 open sessions, its limit") || !strings.Contains(msg.Error.Message, "--max-sessions") {
		t.Errorf("third session: %s %q %v", resp.Status, body, err)
	}
	err := testwait.Call("initialize", func(ctx context.Context) error {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}}, nil)
		if err == nil {
			cs.Close()
		}
		return err
	})
	if err == nil {
		t.Error("an SDK client got a third session")
	} else if strings.Contains(err.Error(), "no reply") {
		t.Error(err)
	}
	for _, cs := range []*mcp.ClientSession{a, b} {
		if got := text(call(t, cs, "bash", bashArgs("echo on"))); got != "on\n" {
			t.Errorf("an open session: %q", got)
		}
	}
	if err := a.Close(); err != nil { // DELETE
		t.Fatal(err)
	}
	c := r.client(t, nil, false)
	if got := text(call(t, c, "bash", bashArgs("echo new"))); got != "new\n" {
		t.Errorf("the new session: %q", got)
	}
	if n := r.h.Sessions(); n != 2 {
		t.Errorf("Sessions() = %d", n)
	}
}

// TestHTTPClientGone: a client whose connections all drop, without a
// DELETE, loses its session after the grace: its call in flight is
// aborted and its background task killed.
func TestHTTPClientGone(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, SessionGrace: 200 * time.Millisecond})
	d := &dropper{}
	cs := r.client(t, d, true)
	bg := background(t, cs)
	fg, called := foreground(t, cs)
	d.drop()
	waitExit(t, "the background sleep", bg)
	waitExit(t, "the foreground command", fg)
	if err := testwait.Recv(t, called, "end of the dropped call"); err == nil {
		t.Error("the dropped call returned a result")
	}
}

// TestHTTPClientTooLate: a client that comes back once its session has
// ended is told the session is gone (a 404, which the SDK client reports
// as ErrSessionMissing), even while the session is still closing.
func TestHTTPClientTooLate(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, SessionGrace: 200 * time.Millisecond})
	cs := r.client(t, nil, false)
	waitExit(t, "the background sleep", background(t, cs))
	ctx, cancel := context.WithTimeout(context.Background(), exitWait)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: bashArgs("echo late")})
	if !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("a call after the grace: %v", err)
	}
}

// TestHTTPClientBack: a client that drops and comes back within the grace
// keeps its session and its tasks.
func TestHTTPClientBack(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, SessionGrace: time.Hour})
	d := &dropper{}
	cs := r.client(t, d, false)
	pid := background(t, cs)
	d.drop()
	r.waitIdle(t, cs.ID())
	if n, counting, ending, ok := r.state(cs.ID()); n != 0 || !counting || ending || !ok {
		t.Fatalf("the dropped session: %d in flight, counting %v, ending %v, known %v", n, counting, ending, ok)
	}
	d.restore()
	if got := text(call(t, cs, "bash_output", map[string]any{"task_id": "bash-1"})); got != "(no new output)\n[status: running]" {
		t.Errorf("bash_output after coming back: %q", got)
	}
	if !proctest.Alive(pid) {
		t.Error("the task died")
	}
}

// TestHTTPOpenStream: an open GET stream, or a call in flight, keeps a
// session past the grace, while an idle session next to it ends.
func TestHTTPOpenStream(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, SessionGrace: 200 * time.Millisecond})
	listening := r.client(t, nil, true)
	lpid := background(t, listening)
	calling := r.client(t, nil, false)
	fg, called := foreground(t, calling)
	idle := r.client(t, nil, false)
	waitExit(t, "the idle session's sleep", background(t, idle))
	// Both sessions went quiet before the idle one: they would be gone.
	for _, cs := range []*mcp.ClientSession{listening, calling} {
		if n, counting, ending, ok := r.state(cs.ID()); n < 1 || counting || ending || !ok {
			t.Errorf("session %s: %d in flight, counting %v, ending %v, known %v", cs.ID(), n, counting, ending, ok)
		}
	}
	if !proctest.Alive(lpid) || !proctest.Alive(fg) {
		t.Error("a task of a live session died")
	}
	if got := text(call(t, listening, "bash_output", map[string]any{"task_id": "bash-1"})); got != "(no new output)\n[status: running]" {
		t.Errorf("bash_output of the listening session: %q", got)
	}
	syscall.Kill(fg, syscall.SIGKILL)
	if err := testwait.Recv(t, called, "end of the call in flight"); err != nil {
		t.Errorf("the call in flight: %v", err)
	}
}

// TestHTTPDelete: DELETE ends a session at once: when it is answered, the
// session's call in flight has been aborted and its tasks are dead.
func TestHTTPDelete(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, SessionGrace: time.Hour})
	cs := r.client(t, nil, true)
	bg := background(t, cs)
	fg, called := foreground(t, cs)
	req, _ := http.NewRequest("DELETE", r.url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(sessionIDHeader, cs.ID())
	resp, err := (&http.Client{Timeout: exitWait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %s", resp.Status)
	}
	if proctest.Alive(bg) || proctest.Alive(fg) {
		t.Errorf("alive after DELETE: background %v, foreground %v", proctest.Alive(bg), proctest.Alive(fg))
	}
	if err := testwait.Recv(t, called, "end of the deleted session's call"); err == nil {
		t.Error("the deleted session's call returned a result")
	}
}

// serveStreamable runs ServeStreamable on a loopback listener until the
// returned cancel is called; served gets what it returned.
func serveStreamable(t *testing.T, opts *HTTPOptions) (hr *httpRig, ln net.Listener, cancel func(), served <-chan error) {
	t.Helper()
	r := newRig(t, nil)
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- r.srv.ServeStreamable(ctx, ln, opts) }()
	return &httpRig{rig: r, url: "http://" + ln.Addr().String()}, ln, cancel, done
}

// TestServeStreamableShutdown: when its context ends, ServeStreamable
// returns without waiting on a connection that sent no request (the
// standard library would wait for it up to 5 s), nor on a call in flight
// that ignores SIGTERM, whatever the configured timeouts; every task dies.
func TestServeStreamableShutdown(t *testing.T) {
	hr, ln, cancel, served := serveStreamable(t, &HTTPOptions{Token: testToken, SessionGrace: time.Hour,
		ReadHeaderTimeout: time.Hour, IdleTimeout: time.Hour, FlushTimeout: time.Hour})
	cs := hr.client(t, nil, true)
	bg := background(t, cs)
	fg, called := foreground(t, cs)
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	dialed := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeStreamable: %v", err)
		}
	case <-time.After(exitWait):
		t.Fatal("ServeStreamable did not return")
	}
	// The standard library closes a silent connection only once it is more
	// than 5 s old: younger, it was closed by the shutdown itself.
	if age := time.Since(dialed); age >= 5*time.Second {
		t.Errorf("the shutdown took %v: it waited on the silent connection", age)
	}
	raw.SetReadDeadline(time.Now().Add(testwait.Limit))
	if n, err := raw.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the silent connection: read %d, %v", n, err)
	}
	if proctest.Alive(bg) || proctest.Alive(fg) {
		t.Errorf("alive after shutdown: background %v, foreground %v", proctest.Alive(bg), proctest.Alive(fg))
	}
	testwait.Recv(t, called, "end of the call in flight")
}

// TestListen: no token is allowed off loopback; a unix socket is 0600
// whatever the umask, leaves no private directory behind, refuses what
// is in the way and goes away on Close.
func TestListen(t *testing.T) {
	if _, err := Listen("0.0.0.0:0", true); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("0.0.0.0 without a token: %v", err)
	}
	ln, err := Listen("127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")
	old := syscall.Umask(0)
	ln, err = Listen("unix:"+path, true)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode() != os.ModeSocket|0o600 {
		t.Errorf("the socket: %v %v", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left beside the socket: %v", ents)
	}
	if ln.Addr().String() != path {
		t.Errorf("Addr %q", ln.Addr())
	}
	if _, err := Listen("unix:"+path, true); err == nil || !strings.Contains(err.Error(), "a server is listening on it") {
		t.Errorf("a socket in use: %v", err)
	}
	if err := ln.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := Listen("unix:"+dir, true); err == nil || !strings.Contains(err.Error(), "it exists and is not a socket") {
		t.Errorf("a directory at PATH: %v", err)
	}
}

// stalledUpload sends the headers of a POST and the start of its body,
// then nothing: a client stalled in the middle of a request.
func stalledUpload(t *testing.T, addr, session string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := "POST / HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + testToken +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
	if session != "" {
		head += sessionIDHeader + ": " + session + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n{"); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHTTPStalledUpload: a request whose body stops arriving is answered
// (and its place under the session cap given back) once BodyTimeout
// passes.
func TestHTTPStalledUpload(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, MaxSessions: 1, BodyTimeout: 200 * time.Millisecond})
	c := stalledUpload(t, strings.TrimPrefix(r.url, "http://"), "")
	c.SetReadDeadline(time.Now().Add(exitWait))
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 4") {
		t.Fatalf("the stalled upload: %q, %v", status, err)
	}
	r.client(t, nil, false) // the one place under the cap is free again
}

// TestServeStreamableStalledUpload: a client stalled in the middle of a
// request does not hold the shutdown up, however long BodyTimeout is.
func TestServeStreamableStalledUpload(t *testing.T) {
	hr, ln, cancel, served := serveStreamable(t, &HTTPOptions{Token: testToken, BodyTimeout: time.Hour})
	cs := hr.client(t, nil, false)
	for _, session := range []string{"", cs.ID()} { // a new session's and an open one's
		c := stalledUpload(t, ln.Addr().String(), session)
		defer c.Close()
	}
	cancel()
	select {
	case <-served:
	case <-time.After(exitWait):
		t.Fatal("ServeStreamable did not return")
	}
}

// TestHTTPCallHungUp: a client that closes its connection in the middle of
// a call (as when the user interrupts) has that call's command aborted,
// while its session, still within its grace, goes on.
func TestHTTPCallHungUp(t *testing.T) {
	r := newHTTPRig(t, &HTTPOptions{Token: testToken, SessionGrace: time.Hour})
	d := &dropper{}
	cs := r.client(t, d, false)
	bg := background(t, cs)
	fg, called := foreground(t, cs)
	d.drop()
	waitExit(t, "the foreground command of the closed request", fg)
	testwait.Recv(t, called, "end of the closed request's call")
	if _, _, ending, ok := r.state(cs.ID()); ending || !ok {
		t.Errorf("the session: ending %v, known %v", ending, ok)
	}
	if !proctest.Alive(bg) {
		t.Error("the session's background task died")
	}
}
