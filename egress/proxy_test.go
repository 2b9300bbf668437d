package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/testwait"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// upstream is a real HTTP server on loopback, which the tests reach by
// the name registry.test (or any name their resolver maps to it), and
// counts the requests it gets.
type upstream struct {
	plain, tls *httptest.Server
	hits       atomic.Int64
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		fmt.Fprintf(w, "hello from upstream (Host %s)\n", r.Host)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		w.Header().Set("Content-Length", fmt.Sprint(bigSize))
		writePattern(w, bigSize)
	})
	u.plain = httptest.NewServer(mux)
	u.tls = httptest.NewTLSServer(mux)
	t.Cleanup(func() { u.plain.Close(); u.tls.Close() })
	return u
}

const bigSize = 2 << 20

// writePattern writes n bytes of a pattern a reader can check.
func writePattern(w io.Writer, n int) {
	line := []byte("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n")
	for n > 0 {
		k, _ := w.Write(line[:min(n, len(line))])
		if k == 0 {
			return
		}
		n -= k
	}
}

func (u *upstream) port(tls bool) string {
	s := u.plain
	if tls {
		s = u.tls
	}
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// loopbackDNS maps every name under .test to 127.0.0.1, where the
// upstream listens.
func loopbackDNS(_ context.Context, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".test") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, fmt.Errorf("no such host %s (the tests reach no network)", host)
}

// startProxy serves a proxy on a loopback port for the session "s1".
func startProxy(t *testing.T, o Options) (string, *Proxy) {
	t.Helper()
	return startProxyEvents(t, o, nil)
}

// startProxyEvents is startProxy with the proxy's events told to event.
func startProxyEvents(t *testing.T, o Options, event func(string)) (string, *Proxy) {
	t.Helper()
	return startProxyTuned(t, o, func(p *Proxy) { p.event = event })
}

// startProxyTuned is startProxy with tune setting what only tests set
// (events, the clock, shorter timeouts) before the proxy serves.
func startProxyTuned(t *testing.T, o Options, tune func(p *Proxy)) (string, *Proxy) {
	t.Helper()
	if o.Resolve == nil {
		o.Resolve = loopbackDNS
	}
	p, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	tune(p)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l, "s1") }()
	t.Cleanup(func() {
		p.Close()
		select {
		case err := <-served:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Serve after Close = %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return within 5s of Close")
		}
	})
	return l.Addr().String(), p
}

// curl runs the real curl with args, without proxies from the
// environment, and returns its output and exit code.
func curl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is missing (.ci/run installs it)")
		}
		t.Skip("no curl")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "curl", append([]string{"-sS", "--max-time", "15"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("curl: %v", err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

func TestCurlThroughProxy(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	allowed := []string{"registry.test", "127.0.0.1"}
	proxy, _ := startProxy(t, Options{Allow: allowed})
	plain := "http://registry.test:" + u.port(false)
	secure := "https://registry.test:" + u.port(true)
	want := "hello from upstream (Host registry.test:"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"HTTP request", []string{"-x", "http://" + proxy, plain + "/hello"}},
		{"HTTP CONNECT, TLS", []string{"-k", "-x", "http://" + proxy, secure + "/hello"}},
		{"CONNECT for plain HTTP", []string{"-p", "-x", "http://" + proxy, plain + "/hello"}},
		{"SOCKS5 with a name", []string{"--socks5-hostname", proxy, plain + "/hello"}},
		{"SOCKS5 with a name, TLS", []string{"-k", "--socks5-hostname", proxy, secure + "/hello"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := curl(t, tc.args...)
			if code != 0 || !strings.HasPrefix(out, want) {
				t.Errorf("curl %q: exit %d, %q; want %q…", tc.args, code, out, want)
			}
		})
	}
	t.Run("2 MiB through a tunnel", func(t *testing.T) {
		out, code := curl(t, "-k", "-x", "http://"+proxy, secure+"/big")
		var w strings.Builder
		writePattern(&w, bigSize)
		if code != 0 || out != w.String() {
			t.Errorf("exit %d, %d bytes, want %d bytes of the pattern", code, len(out), bigSize)
		}
	})
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	var refused []string
	var mu sync.Mutex
	proxy, _ := startProxy(t, Options{
		Allow: []string{"registry.test", "rebind.test"}, Deny: []string{"evil.registry.test"},
		RefusalText: func(r *Refusal) string { return "REFUSED " + r.Error() },
		Refused:     func(r *Refusal) { mu.Lock(); refused = append(refused, r.Host); mu.Unlock() },
	})
	port := u.port(false)
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"unlisted, HTTP", []string{"-x", "http://" + proxy, "http://other.test:" + port + "/hello"}, 0,
			"REFUSED egress: other.test:" + port + " is not in the allowlist\n"},
		{"denied, HTTP", []string{"-x", "http://" + proxy, "http://evil.registry.test:" + port + "/hello"}, 0,
			`REFUSED egress: evil.registry.test:` + port + ` denied by rule "evil.registry.test"` + "\n"},
		{"rebinding: a listed name resolving to loopback", []string{"-x", "http://" + proxy, "http://rebind.test:" + port + "/hello"}, 0,
			"REFUSED egress: rebind.test:" + port + " is the local address 127.0.0.1, which no rule allows\n"},
		{"loopback address", []string{"-x", "http://" + proxy, "http://127.0.0.1:" + port + "/hello"}, 0,
			"REFUSED egress: 127.0.0.1:" + port + " is the local address 127.0.0.1, which no rule allows\n"},
		{"cloud metadata", []string{"-x", "http://" + proxy, "http://169.254.169.254/latest/meta-data/"}, 0,
			"REFUSED egress: 169.254.169.254:80 is the local address 169.254.169.254, which no rule allows\n"},
		{"unlisted, CONNECT", []string{"-k", "-x", "http://" + proxy, "https://other.test:" + port + "/hello"}, 56, "CONNECT tunnel failed, response 403"},
		{"unlisted, SOCKS5", []string{"--socks5-hostname", proxy, "http://other.test:" + port + "/hello"}, 97, "Can't complete SOCKS5 connection to other.test. (2)"},
		{"loopback, SOCKS5 address", []string{"--socks5", proxy, "http://127.0.0.1:" + port + "/hello"}, 97, "Can't complete SOCKS5 connection to 127.0.0.1. (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := curl(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(out, tc.wantOut) {
				t.Errorf("curl %q: exit %d, %q; want exit %d with %q", tc.args, code, out, tc.wantCode, tc.wantOut)
			}
		})
	}
	if n := u.hits.Load(); n != 0 {
		t.Errorf("the upstream got %d requests; every one should have been refused", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 8 {
		t.Errorf("Refused was told of %d refusals (%q), want 8", len(refused), refused)
	}
}

// asker answers the proxy's questions from a table, counting them.
type asker struct {
	mu      sync.Mutex
	asked   map[string]int
	answers map[string]Decision
	release chan struct{} // closed to let answers through (nil: at once); set before use
	ch      chan string   // told of each question's host, if set
}

func (a *asker) ask(ctx context.Context, q Question) (Decision, error) {
	a.mu.Lock()
	a.asked[q.Host]++
	d, ok := a.answers[q.Host]
	a.mu.Unlock()
	if a.ch != nil {
		a.ch <- q.Host
	}
	if a.release != nil {
		select {
		case <-a.release:
		case <-ctx.Done():
			return Deny, ctx.Err()
		}
	}
	if !ok {
		return Deny, errors.New("no answer")
	}
	return d, nil
}

func (a *asker) count(host string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked[host]
}

func TestAsk(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	a := &asker{asked: map[string]int{}, answers: map[string]Decision{
		"session.test": AllowSession, "once.test": AllowOnce, "no.test": Deny},
		ch: make(chan string, 100), release: make(chan struct{})}
	waiting := make(chan string, 10)
	proxy, p := startProxyEvents(t, Options{Allow: []string{"127.0.0.1"}, Ask: a.ask,
		RefusalText: func(r *Refusal) string { return r.Error() }}, func(e string) {
		if e == "waiting" {
			waiting <- e
		}
	})
	get := func(host string) string {
		out, _ := curl(t, "-x", "http://"+proxy, "http://"+host+":"+u.port(false)+"/hello")
		return out
	}
	ok := "hello from upstream"

	// Four connections at once wait for one question (and the release:
	// once closed, it lets every later answer through at once).
	var wg sync.WaitGroup
	outs := make([]string, 4)
	for i := range outs {
		wg.Go(func() { outs[i] = get("session.test") })
	}
	testwait.Recv(t, a.ch, "the question about session.test")
	for range 3 {
		testwait.Recv(t, waiting, "another connection waiting for that question")
	}
	close(a.release)
	wg.Wait()
	for i, out := range outs {
		if !strings.HasPrefix(out, ok) {
			t.Errorf("connection %d to session.test: %q", i, out)
		}
	}
	for _, step := range []struct {
		host, want string
		asked      int
	}{
		{"session.test", ok, 1}, // remembered for the session
		{"once.test", ok, 1},
		{"once.test", ok, 2}, // asked again
		{"no.test", "egress: the user declined no.test:", 1},
		{"no.test", "egress: the user declined no.test:", 1}, // remembered
		{"unanswered.test", "is not in the allowlist", 1},    // the asker failed
	} {
		if out := get(step.host); !strings.Contains(out, step.want) {
			t.Errorf("%s: %q, want %q", step.host, out, step.want)
		}
		if n := a.count(step.host); n != step.asked {
			t.Errorf("%s asked %d times, want %d", step.host, n, step.asked)
		}
	}
	p.EndOwner("s1")
	if out := get("session.test"); !strings.HasPrefix(out, ok) || a.count("session.test") != 2 {
		t.Errorf("after EndOwner: %q, asked %d times, want a new question", out, a.count("session.test"))
	}
}

// retryUntil tries again until try succeeds, within 10 s; each try is
// paced by its own I/O (it connects, and waits for an answer).
func retryUntil(t *testing.T, what string, try func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !try() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
	}
}

// serveOwner serves another listener of p, for the session owner.
func serveOwner(t *testing.T, p *Proxy, owner string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); p.Serve(l, owner) }()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}

// dialTunnel opens a CONNECT tunnel by hand and returns it once the proxy
// said 200, or the status line it sent.
func dialTunnel(t *testing.T, proxy, dest string) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	line, err := readLine(c)
	if err != nil && line == "" {
		return c, "" // closed unanswered
	}
	if err != nil {
		t.Fatalf("CONNECT %s: %v", dest, err)
	}
	if strings.HasPrefix(line, "HTTP/1.1 200") {
		for l := line; l != ""; {
			if l, err = readLine(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = c.SetDeadline(time.Time{})
	return c, line
}

// readLine reads one CRLF line a byte at a time (no read-ahead).
func readLine(c net.Conn) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := c.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return strings.TrimSuffix(string(b), "\r"), nil
		}
		b = append(b, one[0])
	}
}

// silentServer accepts connections and holds them, saying nothing.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

func TestBounds(t *testing.T) {
	t.Parallel()
	silent := silentServer(t)
	t.Run("connections", func(t *testing.T) {
		freed := make(chan string, 10)
		proxy, p := startProxyEvents(t, Options{Allow: []string{"127.0.0.1"}, MaxConns: 3, MaxConnsPerOwner: 2, IdleTimeout: time.Second},
			func(e string) {
				if e == "freed" {
					freed <- e
				}
			})
		other := serveOwner(t, p, "s2")
		c1, l1 := dialTunnel(t, proxy, silent)
		defer c1.Close()
		c2, l2 := dialTunnel(t, proxy, silent)
		defer c2.Close()
		// The session's third is closed at once, unread; another session
		// still gets its own.
		c3, l3 := dialTunnel(t, proxy, silent)
		c3.Close()
		c4, l4 := dialTunnel(t, other, silent)
		defer c4.Close()
		// And the proxy's fourth is closed, whoever asks.
		c5, l5 := dialTunnel(t, other, silent)
		c5.Close()
		if !strings.HasPrefix(l1, "HTTP/1.1 200") || !strings.HasPrefix(l2, "HTTP/1.1 200") || l3 != "" ||
			!strings.HasPrefix(l4, "HTTP/1.1 200") || l5 != "" {
			t.Fatalf("tunnels: %q, %q, %q, %q, %q; want 200, 200, closed, 200, closed", l1, l2, l3, l4, l5)
		}
		c1.Close()
		// The tunnels to the silent server end idle, each in about a
		// second; the slot freed first may be another owner's (c4's), so
		// a tunnel is tried after each, until c1's and c2's are free.
		l := ""
		for range 3 {
			testwait.Recv(t, freed, "the slot of a tunnel that ended")
			var c net.Conn
			if c, l = dialTunnel(t, proxy, silent); c.Close() == nil && strings.HasPrefix(l, "HTTP/1.1 200") {
				break
			}
		}
		if !strings.HasPrefix(l, "HTTP/1.1 200") {
			t.Errorf("a tunnel after those ended: %q, want 200", l)
		}
	})
	t.Run("idle tunnel", func(t *testing.T) {
		proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}, IdleTimeout: 200 * time.Millisecond})
		c, l := dialTunnel(t, proxy, silent)
		defer c.Close()
		if !strings.HasPrefix(l, "HTTP/1.1 200") {
			t.Fatal(l)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("read of an idle tunnel: %d, %v; want EOF once the idle timeout closed it", n, err)
		}
	})
	t.Run("header size", func(t *testing.T) {
		proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}})
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() {
			fmt.Fprintf(c, "GET http://x.test/ HTTP/1.1\r\nX-Long: %s", strings.Repeat("a", 1<<20))
		}()
		line, _ := readLine(c)
		if line != "HTTP/1.1 400 Bad Request" {
			t.Errorf("a 1 MiB header: %q, want 400", line)
		}
	})
	t.Run("header time", func(t *testing.T) {
		proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}, HeaderTimeout: 200 * time.Millisecond})
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n") // and nothing more
		line, err := readLine(c)
		if !strings.HasPrefix(line, "HTTP/1.1 400") && !errors.Is(err, io.EOF) {
			t.Errorf("a stalled header: %q, %v; want 400 or EOF once the header timeout passed", line, err)
		}
	})
}

func TestGitCloneThroughProxy(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	gitRun("init", "-q", "src")
	if err := os.WriteFile(dir+"/src/README", []byte("through the proxy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun("-C", "src", "add", "README")
	gitRun("-C", "src", "commit", "-qm", "first")
	gitRun("clone", "-q", "--bare", "src", "srv/repo.git")
	gitRun("-C", "srv/repo.git", "update-server-info")
	srv := httptest.NewServer(http.FileServer(http.Dir(dir + "/srv")))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy, _ := startProxy(t, Options{Allow: []string{"git.test", "127.0.0.1"}})
	gitRun("-c", "http.proxy=http://"+proxy, "clone", "-q", "http://git.test:"+port+"/repo.git", "dst")
	if b, err := os.ReadFile(dir + "/dst/README"); err != nil || string(b) != "through the proxy\n" {
		t.Errorf("cloned README: %q, %v", b, err)
	}
}

// TestUpstreamHeaderBounded: an allowed upstream that sends a header
// without end does not grow the proxy's memory: the proxy answers 502 and
// hangs up once the header passes its bound, long before the upstream
// has sent its gigabyte.
func TestUpstreamHeaderBounded(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sent := make(chan int64, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			sent <- -1
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		n, _ := io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
		total := int64(n)
		for range 1 << 20 { // a gigabyte, unless the proxy hangs up
			n, err := io.WriteString(c, line)
			total += int64(n)
			if err != nil {
				break
			}
		}
		sent <- total
	}()
	proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}})
	out, code := curl(t, "-x", "http://"+proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://"+l.Addr().String()+"/")
	if out != "502" || code != 0 {
		t.Errorf("curl: exit %d, %q; want 502", code, out)
	}
	if n := <-sent; n < 0 || n > 32<<20 {
		t.Errorf("the upstream sent %d bytes of header before the proxy hung up; want it bounded (64 KiB and the sockets' buffers)", n)
	}
}

// TestOutOfFiles: a command that opens connections until the proxy's
// process runs out of descriptors does not end the proxy: once they
// close, it serves again (for every session: one Serve per session, all
// in one process).
func TestOutOfFiles(t *testing.T) {
	t.Parallel()
	silent := silentServer(t)
	proxy, _ := proxyProcess(t, "proxy-few-files")
	var flood []net.Conn
	for range 200 {
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			break
		}
		flood = append(flood, c)
	}
	// A CONNECT now gets no answer (no descriptor to dial with, or not
	// accepted): that is the attack's effect, not what is tested.
	for _, c := range flood {
		c.Close()
	}
	retryUntil(t, "the proxy serving again after the flood", func() bool {
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatalf("the proxy stopped listening: %v", err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", silent, silent)
		line, _ := readLine(c)
		return strings.HasPrefix(line, "HTTP/1.1 200")
	})
}
