//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exitWait bounds waiting for something that must happen: only a test
// that would otherwise hang reaches it.
const exitWait = time.Minute

const goodToken = "a-token-long-enough-0123456789"

// httpServer is a running dsh-bash mcp --http.
type httpServer struct {
	cmd    *exec.Cmd
	where  string   // what follows "serving streamable HTTP on "
	before []string // the stderr lines before that one
	stderr *testwait.Lines
}

// startHTTP starts dsh-bash mcp --http with args and env (added to the
// test's) and waits until it serves.
func startHTTP(t *testing.T, env []string, args ...string) *httpServer {
	t.Helper()
	return startHTTPCmd(t, execCommand(append([]string{"mcp"}, args...)...), env)
}

// startHTTPCmd starts cmd, a dsh-bash mcp --http, with env added to the
// test's, and waits until it serves.
func startHTTPCmd(t *testing.T, cmd *exec.Cmd, env []string) *httpServer {
	t.Helper()
	cmd.Env = append(os.Environ(), env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	s := &httpServer{cmd: cmd, stderr: testwait.NewLines(pr)} // read to its end, which the exit brings
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for {
		line, err := s.stderr.Next(t, `line "serving streamable HTTP on" from dsh-bash mcp`)
		if err != nil {
			t.Fatalf("dsh-bash mcp did not serve: %q", s.before)
		}
		line = strings.TrimSuffix(line, "\n")
		if w, ok := strings.CutPrefix(line, "dsh-bash mcp: serving streamable HTTP on "); ok {
			s.where = w
			return s
		}
		s.before = append(s.before, line)
	}
}

// stop sends SIGTERM and waits for the exit, within exitWait.
func (s *httpServer) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := waitCmd(t, s.cmd, exitWait, "dsh-bash mcp ignored SIGTERM"); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// tokenPath is the file a generated token was written to.
func (s *httpServer) tokenPath(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`^dsh-bash mcp: bearer token in (.+) \(removed on exit\)$`)
	for _, l := range s.before {
		if m := re.FindStringSubmatch(l); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no token file named in %q", s.before)
	return ""
}

// clientFor connects an SDK client to s with token ("" for none).
func clientFor(t *testing.T, s *httpServer, token string, sse bool) (*mcp.ClientSession, error) {
	tr := &http.Transport{}
	url := s.where
	if path, ok := strings.CutPrefix(s.where, "unix:"); ok {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}
		url = "http://localhost/"
	}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	if token != "" {
		hc.Transport = tokenTransport{token, tr}
	}
	cs, err := connect(&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: !sse, MaxRetries: -1})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// connect connects a client over tr, within testwait.Limit.
func connect(tr mcp.Transport) (*mcp.ClientSession, error) {
	return testwait.Reply("initialize", func(ctx context.Context) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, tr, nil)
	})
}

func mustClient(t *testing.T, s *httpServer, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := clientFor(t, s, token, true)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

type tokenTransport struct {
	token string
	rt    http.RoundTripper
}

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tt.token)
	return tt.rt.RoundTrip(r)
}

// status is the HTTP status of a bare POST with the given Authorization.
func status(t *testing.T, url, auth string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Timeout: testwait.Limit}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func writeFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return p
}

// TestMCPHTTPBinary: without a token given, dsh-bash mcp --http makes one,
// writes it to a private file it names (the token itself is never
// printed), requires it, and removes it on SIGTERM, which stops the server
// and its tasks.
func TestMCPHTTPBinary(t *testing.T) {
	t.Parallel()
	s := startHTTPCmd(t, raceCommand("mcp", "--http", "127.0.0.1:0"), nil) // its wiring checked for races
	if !strings.HasPrefix(s.where, "http://127.0.0.1:") {
		t.Fatalf("serving on %q", s.where)
	}
	path := s.tokenPath(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Errorf("token %q", token)
	}
	for _, l := range s.before {
		if strings.Contains(l, token) {
			t.Errorf("the token is on stderr: %q", l)
		}
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): os.ModeDir | 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
	}
	if got := status(t, s.where, ""); got != http.StatusUnauthorized {
		t.Errorf("no token: %d", got)
	}
	if got := status(t, s.where, "Bearer "+token+"0"); got != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", got)
	}
	cs := mustClient(t, s, token)
	pid := syncedPid(t, cs)
	s.stop(t)
	if alive(pid) {
		t.Errorf("sleep %d outlived dsh-bash mcp --http", pid)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token's directory outlived the server: %v", err)
	}
}

// TestMCPHTTPTokenSources: a token from --token-file or DSH_BASH_TOKEN is
// the one required, and the commands run do not see DSH_BASH_TOKEN.
func TestMCPHTTPTokenSources(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]func() ([]string, []string){
		"file": func() ([]string, []string) { return nil, []string{"--token-file", writeFile(t, goodToken+"\n", 0o600)} },
		"env":  func() ([]string, []string) { return []string{"DSH_BASH_TOKEN=" + goodToken}, nil },
	} {
		t.Run(name, func(t *testing.T) {
			env, args := setup()
			s := startHTTP(t, env, append([]string{"--http", "127.0.0.1:0"}, args...)...)
			if got := status(t, s.where, "Bearer wrong-token-0123456789"); got != http.StatusUnauthorized {
				t.Errorf("a wrong token: %d", got)
			}
			cs := mustClient(t, s, goodToken)
			if got := callText(t, cs, "bash", map[string]any{"command": "echo ${DSH_BASH_TOKEN-unset}", "description": "Show the token"}); got != "unset\n" {
				t.Errorf("a command sees DSH_BASH_TOKEN: %q", got)
			}
			s.stop(t)
		})
	}
}

func TestMCPHTTPUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := writeFile(t, goodToken, 0o644)
	short := writeFile(t, "short", 0o600)
	good := writeFile(t, goodToken, 0o600)
	theirs := writeFile(t, goodToken, 0o600)
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		theirs = "" // not root: the case is skipped
	}
	cases := []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"mcp", "--http", "0.0.0.0:0", "--no-auth"}, "dsh-bash mcp: refusing to serve on 0.0.0.0, which is not a loopback address, without a token: anyone who reaches it could run commands here; drop --no-auth, or listen on 127.0.0.1\n"},
		{"", []string{"mcp", "--http", "127.0.0.1:0", "--token", "s3cret"}, "dsh-bash mcp: --token is not accepted: every user can read a command line; use --token-file PATH or DSH_BASH_TOKEN\n"},
		{"", []string{"mcp", "--token=s3cret"}, "dsh-bash mcp: --token is not accepted: every user can read a command line; use --token-file PATH or DSH_BASH_TOKEN\n"},
		{"", []string{"mcp", "--no-auth"}, "dsh-bash mcp: --no-auth goes with --http\n"},
		{"", []string{"mcp", "--token-file", good}, "dsh-bash mcp: --token-file goes with --http\n"},
		{"", []string{"mcp", "--session-grace", "1s"}, "dsh-bash mcp: --session-grace goes with --http\n"},
		{"", []string{"mcp", "--drain-timeout", "1s"}, "dsh-bash mcp: --drain-timeout goes with --http\n"},
		{"", []string{"mcp", "--http", "127.0.0.1:0", "--drain-timeout", "-1s"}, "dsh-bash mcp: --drain-timeout must not be negative (got -1s)\n"},
		{"", []string{"mcp", "--http", "127.0.0.1:0", "--token-file", open}, "dsh-bash mcp: token file " + open + " is open to other users (mode 0644): chmod 600 " + open + "\n"},
		{"", []string{"mcp", "--http", "127.0.0.1:0", "--token-file", short}, "dsh-bash mcp: the token in " + short + " is shorter than 16 characters: too easy to guess (openssl rand -hex 32 makes a good one)\n"},
		{"", []string{"mcp", "--http", "127.0.0.1:0", "--token-file", dir}, "dsh-bash mcp: token file " + dir + " is not a regular file\n"},
		{"DSH_BASH_TOKEN=" + goodToken, []string{"mcp", "--http", "127.0.0.1:0", "--token-file", good}, "dsh-bash mcp: give the token one way, --token-file or DSH_BASH_TOKEN, not both\n"},
		{"DSH_BASH_TOKEN=" + goodToken, []string{"mcp", "--http", "127.0.0.1:0", "--no-auth"}, "dsh-bash mcp: --no-auth and a token (--token-file or DSH_BASH_TOKEN) contradict each other\n"},
	}
	if theirs != "" {
		cases = append(cases, struct {
			env  string
			args []string
			want string
		}{"", []string{"mcp", "--http", "127.0.0.1:0", "--token-file", theirs}, "dsh-bash mcp: token file " + theirs + " belongs to uid 65534, not to this user (uid 0)\n"})
	}
	for _, tc := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), exitWait) // a server that starts fails
		cmd := exec.CommandContext(ctx, binary, tc.args...)
		cmd.Env = append(os.Environ(), tc.env)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || stderr.String() != tc.want {
			t.Errorf("%s %q: %v, stderr %q", tc.env, tc.args, err, stderr.String())
		}
	}
}

// TestMCPHTTPNoAuth: --no-auth serves loopback without a token.
func TestMCPHTTPNoAuth(t *testing.T) {
	t.Parallel()
	s := startHTTP(t, nil, "--http", "127.0.0.1:0", "--no-auth")
	cs := mustClient(t, s, "")
	if got := callText(t, cs, "bash", map[string]any{"command": "echo open", "description": "Say open"}); got != "open\n" {
		t.Errorf("call: %q", got)
	}
	s.stop(t)
}

// TestMCPHTTPUnix: --http unix:PATH serves on a 0600 socket, refuses a
// PATH in use or not a socket, replaces a stale socket, and removes its
// own on exit.
func TestMCPHTTPUnix(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.sock")
	s := startHTTP(t, nil, "--http", "unix:"+path)
	if s.where != "unix:"+path {
		t.Fatalf("serving on %q", s.where)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode() != os.ModeSocket|0o600 {
		t.Fatalf("the socket: %v %v", fi.Mode(), err)
	}
	if _, err := clientFor(t, s, "", false); err == nil {
		t.Error("connected without the token")
	}
	cs := mustClient(t, s, readToken(t, s))
	if got := callText(t, cs, "bash", map[string]any{"command": "echo unix", "description": "Say unix"}); got != "unix\n" {
		t.Errorf("call: %q", got)
	}
	if _, stderr, code := dshBash(t, "", "mcp", "--http", "unix:"+path); code != 1 || !strings.Contains(stderr, "a server is listening on it") {
		t.Errorf("a second server on the socket: exit %d, %q", code, stderr)
	}
	s.cmd.Process.Kill() // leaves a stale socket
	s.cmd.Wait()
	s = startHTTP(t, nil, "--http", "unix:"+path, "--no-auth")
	mustClient(t, s, "")
	s.stop(t)
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket outlived the server: %v", err)
	}
	file := writeFile(t, "precious", 0o600)
	if _, stderr, code := dshBash(t, "", "mcp", "--http", "unix:"+file, "--no-auth"); code != 1 || !strings.Contains(stderr, "it exists and is not a socket") {
		t.Errorf("a regular file at PATH: exit %d, %q", code, stderr)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "precious" {
		t.Errorf("the file at PATH: %q %v", b, err)
	}
}

func readToken(t *testing.T, s *httpServer) string {
	t.Helper()
	return tokenIn(t, s.tokenPath(t))
}

// tokenIn is the token in the file at path.
func tokenIn(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestMCPHTTPShutdown: with every timeout long and --drain-timeout 0,
// SIGTERM still stops the server within the executor's grace (3 s) and a
// second: it does not wait on a connection that sent nothing, on an open
// GET stream, or on a call in flight whose command ignores SIGTERM. The
// deadline is ten times that.
func TestMCPHTTPShutdown(t *testing.T) {
	t.Parallel()
	s := startHTTP(t, nil, "--http", "127.0.0.1:0", "--no-auth", "--idle-timeout", "1h", "--session-grace", "1h", "--drain-timeout", "0")
	cs := mustClient(t, s, "")
	bg := syncedPid(t, cs)
	fg := foregroundPid(t, cs)
	raw, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(s.where, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := waitCmd(t, s.cmd, 40*time.Second, "dsh-bash mcp --http took more than 40 s to stop"); err != nil {
		t.Errorf("exit: %v", err)
	}
	if alive(bg) || alive(fg) {
		t.Errorf("alive after exit: background %v, foreground %v", alive(bg), alive(fg))
	}
}

// foregroundPid starts a foreground call that ignores SIGTERM and returns
// its pid once it runs. The call has no deadline; the test's end cancels
// it, if the server has not ended it.
func foregroundPid(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fg")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"command": "trap '' TERM; echo $$ > " + fifo + "; sleep 300", "description": "Sleep", "timeoutMs": 600000}})
	}()
	t.Cleanup(func() {
		cancel()
		testwait.Recv(t, done, "end of the cancelled foreground call")
	})
	return proctest.PidFromFIFO(t, fifo)
}

// TestMCPHTTPSessionGrace: with --session-grace, the tasks of a client
// that went away without a DELETE die; --max-sessions caps the sessions.
// holdCall starts a bash call on cs that runs until the returned function
// is called, which then waits for its answer.
func holdCall(t *testing.T, cs *mcp.ClientSession) func() {
	t.Helper()
	dir := t.TempDir()
	running, gate := filepath.Join(dir, "running"), filepath.Join(dir, "gate")
	for _, f := range []string{running, gate} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"command": "echo > " + running + "; read x < " + gate + "; echo released", "description": "Wait"}})
		if err == nil && (len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "released\n") {
			err = fmt.Errorf("held call answered %v", res.Content)
		}
		done <- err
	}()
	testwait.ReadFIFO(t, running, "sign that the held call runs")
	return func() {
		testwait.WriteFIFO(t, gate, "go", "release of the held call")
		err, werr := testwait.Wait(done, "answer of the held call")
		if err = errors.Join(err, werr); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMCPHTTPSessionGrace(t *testing.T) {
	t.Parallel()
	s := startHTTP(t, nil, "--http", "127.0.0.1:0", "--no-auth", "--session-grace", "200ms", "--max-sessions", "1")
	tr := &http.Transport{}
	cs, err := connect(&mcp.StreamableClientTransport{Endpoint: s.where, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	// A call in flight keeps the session from its grace (200ms, which a
	// loaded machine may take between two requests) while the cap is tried.
	held := holdCall(t, cs)
	pid := syncedPid(t, cs)
	if _, err := clientFor(t, s, "", false); err == nil {
		t.Error("a second session past --max-sessions 1")
	}
	held()
	tr.CloseIdleConnections() // gone, without a DELETE
	if err := proctest.WaitExit(pid, exitWait); err != nil {
		t.Error(err)
	}
	mustClient(t, s, "") // its place is free
	s.stop(t)
}

// TestWhere: the address a server says it serves on is the one the user
// gave, with the port it got: 0.0.0.0 stays 0.0.0.0.
func TestWhere(t *testing.T) {
	for _, tt := range []struct{ listen, flag, want string }{
		{"0.0.0.0:0", "0.0.0.0:0", "http://0.0.0.0:PORT/"},
		{"127.0.0.1:0", "127.0.0.1:0", "http://127.0.0.1:PORT/"},
		{"[::1]:0", "[::1]:0", "http://[::1]:PORT/"},
	} {
		ln, err := net.Listen("tcp", tt.listen)
		if err != nil {
			t.Logf("%s: %v", tt.listen, err)
			continue
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		if got := where(ln, tt.flag); got != strings.ReplaceAll(tt.want, "PORT", port) {
			t.Errorf("where(%s) = %q, want %q", tt.flag, got, tt.want)
		}
		ln.Close()
	}
}
