//go:build linux

package sandbox

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/egress"
	"golang.org/x/sys/unix"
)

// registries are real servers on the host's loopback, standing in for the
// internet: a file, a git repository over HTTP, a Go module proxy and an
// npm registry, reached by names under .test.
type registries struct {
	plain, tls *httptest.Server
	hits       map[string]int
}

func newRegistries(t *testing.T) *registries {
	r := &registries{}
	dir := t.TempDir()
	gitRepo(t, dir)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", req.Host)
	})
	mux.Handle("/git/", http.StripPrefix("/git/", http.FileServer(http.Dir(dir))))
	mux.HandleFunc("/example.test/hello/@v/", goModule)
	mux.HandleFunc("/simple/dshprobe/", func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprint(w, `<!DOCTYPE html><html><body><a href="/files/dshprobe-1.0-py3-none-any.whl">dshprobe-1.0-py3-none-any.whl</a></body></html>`)
	})
	mux.HandleFunc("/files/dshprobe-1.0-py3-none-any.whl", wheel)
	mux.HandleFunc("/hello-pkg", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"hello-pkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"hello-pkg","version":"1.0.0","dist":{"tarball":"http://npm.test/hello-pkg-1.0.0.tgz","shasum":"0"}}}}`)
	})
	r.plain = httptest.NewServer(mux)
	r.tls = httptest.NewTLSServer(mux)
	t.Cleanup(func() { r.plain.Close(); r.tls.Close() })
	return r
}

func port(s *httptest.Server) string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// gitRepo makes dir/repo.git, a bare repository served over git's dumb
// HTTP protocol, holding README "through the proxy".
func gitRepo(t *testing.T, dir string) {
	script := `set -e
git init -q src && cd src && echo "through the proxy" > README && git add README
git -c user.name=t -c user.email=t@t commit -qm first && cd ..
git clone -q --bare src repo.git && git -C repo.git update-server-info`
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make the repository: %v\n%s", err, out)
	}
}

// goModule serves example.test/hello v1.0.0 as a module proxy does.
func goModule(w http.ResponseWriter, req *http.Request) {
	switch filepath.Base(req.URL.Path) {
	case "list":
		fmt.Fprintln(w, "v1.0.0")
	case "v1.0.0.info":
		fmt.Fprint(w, `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`)
	case "v1.0.0.mod":
		fmt.Fprintln(w, "module example.test/hello")
	case "v1.0.0.zip":
		z := zip.NewWriter(w)
		for name, body := range map[string]string{
			"go.mod":   "module example.test/hello\n",
			"hello.go": "package hello\n\nconst Greeting = \"hello through the proxy\"\n",
		} {
			f, _ := z.Create("example.test/hello@v1.0.0/" + name)
			fmt.Fprint(f, body)
		}
		z.Close()
	default:
		http.NotFound(w, req)
	}
}

// wheel serves a pure-Python wheel, dshprobe 1.0, as a package index
// does.
func wheel(w http.ResponseWriter, _ *http.Request) {
	z := zip.NewWriter(w)
	for _, f := range [][2]string{
		{"dshprobe/__init__.py", "X = 'through the proxy'\n"},
		{"dshprobe-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: dshprobe\nVersion: 1.0\n"},
		{"dshprobe-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: dsh-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"dshprobe-1.0.dist-info/RECORD", "dshprobe/__init__.py,,\ndshprobe-1.0.dist-info/METADATA,,\ndshprobe-1.0.dist-info/WHEEL,,\ndshprobe-1.0.dist-info/RECORD,,\n"},
	} {
		fw, _ := z.Create(f[0])
		fmt.Fprint(fw, f[1])
	}
	z.Close()
}

// testDNS resolves every name under .test to the host's loopback.
func testDNS(_ context.Context, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".test") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, fmt.Errorf("no such host %s (the tests reach no network)", host)
}

// TestNetworkAllowlist runs real clients in a NetworkAllowlist jail: curl,
// git, go, and npm and pip where installed, reach the listed hosts through the proxy the environment
// names; an unlisted host, cloud metadata and a direct connection to the
// host's loopback (where the servers are) are refused.
func TestNetworkAllowlist(t *testing.T) {
	t.Parallel()
	reg := newRegistries(t)
	p, err := egress.New(&egress.Options{
		Allow:       []string{"registry.test", "git.test", "goproxy.test", "npm.test", "pypi.test", "127.0.0.1"},
		Resolve:     testDNS,
		RefusalText: func(r *egress.Refusal) string { return "REFUSED: " + r.Error() },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() }) // the rows run in parallel, after this function returns
	ws := t.TempDir()
	// The test binary as the agent: the listener it hands over is its code.
	e, err := newSandbox(t, &Options{Layer: LayerJail, Agent: selfAgent(t), Policy: Policy{Network: NetworkAllowlist}, Egress: p, Local: &local.Options{Cwd: ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	plain, tls := port(reg.plain), port(reg.tls)
	gobin, _ := exec.LookPath("go")
	rows := []struct{ name, cmd, want string }{
		{"curl through HTTP_PROXY", "curl -sS http://registry.test:" + plain + "/hello", "hello from registry.test:" + plain + "\n"},
		{"curl through HTTPS_PROXY", "curl -sSk https://registry.test:" + tls + "/hello", "hello from registry.test:" + tls + "\n"},
		{"curl through ALL_PROXY (SOCKS5)", "curl -sS --proxy \"$ALL_PROXY\" http://registry.test:" + plain + "/hello", "hello from registry.test:" + plain + "\n"},
		{"unlisted host", "curl -sS http://other.test:" + plain + "/hello", "REFUSED: egress: other.test:" + plain + " is not in the allowlist\n"},
		{"cloud metadata", "curl -sS http://169.254.169.254/latest/meta-data/", "REFUSED: egress: 169.254.169.254:80 is the local address 169.254.169.254, which no rule allows\n"},
		// The attack: without a network namespace of its own, the jail
		// reaches the host's loopback directly.
		{"direct connection to the host's loopback", "curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:" + plain + "/hello 2>&1 | sed 's/after [0-9]* ms/after N ms/'; " +
			"(exec 3<>/dev/tcp/127.0.0.1/" + plain + ") 2>/dev/null && echo connected || echo refused",
			"curl: (7) Failed to connect to 127.0.0.1 port " + plain + " after N ms: Couldn't connect to server\nrefused\n"},
		{"git clone over HTTP", "git clone -q http://git.test:" + plain + "/git/repo.git cloned && cat cloned/README", "through the proxy\n"},
	}
	if gobin != "" {
		rows = append(rows, struct{ name, cmd, want string }{"go mod download",
			"GOPROXY=http://goproxy.test:" + plain + " GOSUMDB=off GOTOOLCHAIN=local GOFLAGS=-modcacherw GOMODCACHE=$PWD/modcache " + gobin +
				" mod download -json example.test/hello@v1.0.0 >/dev/null && cat modcache/example.test/hello@v1.0.0/hello.go | tail -1",
			"const Greeting = \"hello through the proxy\"\n"})
	}
	if npm, _ := exec.LookPath("npm"); npm != "" {
		rows = append(rows, struct{ name, cmd, want string }{"npm view",
			"npm view hello-pkg version --registry http://npm.test:" + plain + "/ --no-update-notifier --cache $PWD/npm-cache 2>&1", "1.0.0\n"})
	}
	if pip, _ := exec.LookPath("pip3"); pip != "" {
		rows = append(rows, struct{ name, cmd, want string }{"pip download",
			"python3 -m pip download -q --no-deps --disable-pip-version-check --no-cache-dir --index-url https://pypi.test:" + tls + "/simple/ --trusted-host pypi.test:" + tls + " -d dl dshprobe && ls dl",
			"dshprobe-1.0-py3-none-any.whl\n"})
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			spec, err := e.Resolve(ctx, bash.ExecRequest{Owner: "o", Workspace: ws, Workdir: ws, Command: row.cmd})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stdout.Text != row.want {
				t.Errorf("%s\nstdout %q\nstderr %q\nwant   %q", row.cmd, res.Stdout.Text, res.Stderr.Text, row.want)
			}
		})
	}
}

// nopEgress serves nothing: it closes each listener it is given once the
// jail closes it.
type nopEgress struct{ served chan net.Listener }

func (n nopEgress) Serve(l net.Listener, owner string) error {
	n.served <- l
	return nil
}
func (nopEgress) EndOwner(string) {}

// TestProxyListenerChecked: the agent of a NetworkAllowlist jail must
// come ready with one listening TCP socket, and the host takes nothing
// else from it (an agent runs beside the commands: a connected socket, a
// unix socket or a file is refused, and ends the jail).
func TestProxyListenerChecked(t *testing.T) {
	tcpListener := func(t *testing.T) int {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return dupOf(t, l.(*net.TCPListener))
	}
	unixSock := func(t *testing.T) int {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fds[1])
		return fds[0]
	}
	connected := func(t *testing.T) int {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c, err := net.Dial("tcp4", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return dupOf(t, c.(*net.TCPConn))
	}
	for _, tc := range []struct {
		name string
		fds  func(t *testing.T) []int
		ok   bool
	}{
		{"a TCP listener", func(t *testing.T) []int { return []int{tcpListener(t)} }, true},
		{"none", func(t *testing.T) []int { return nil }, false},
		{"two", func(t *testing.T) []int { return []int{tcpListener(t), tcpListener(t)} }, false},
		{"a file", func(t *testing.T) []int { return devNulls(t, 1) }, false},
		{"a unix socket", func(t *testing.T) []int { return []int{unixSock(t)} }, false},
		{"a connected TCP socket", func(t *testing.T) []int { return []int{connected(t)} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := make(chan net.Listener, 1)
			j := newJail("k", "o")
			j.egress = nopEgress{served}
			err := j.dispatch(agentMsg{Started: true}, tc.fds(t))
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, errProtocol) {
				t.Fatalf("dispatch: %v, want ok %v or a protocol error", err, tc.ok)
			}
			if tc.ok {
				<-j.proxyDone
				(<-served).Close()
			}
		})
	}
}

// dupOf is a descriptor of the socket c, of the caller's.
func dupOf(t *testing.T, c interface{ File() (*os.File, error) }) int {
	f, err := c.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestAllowlistNeedsJail: the Landlock layer cannot confine connections
// to the proxy, so a NetworkAllowlist sandbox is refused there, saying
// so, rather than run with the network open; and it needs its proxy.
func TestAllowlistNeedsJail(t *testing.T) {
	t.Parallel()
	_, err := New(t.Context(), &Options{Layer: LayerLandlock, Policy: Policy{Network: NetworkAllowlist}, Egress: nopEgress{}})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "the network allowlist needs the jail") {
		t.Errorf("Landlock layer with the allowlist: %v", err)
	}
	_, err = New(t.Context(), &Options{Policy: Policy{Network: NetworkAllowlist}})
	if err == nil || !strings.Contains(err.Error(), "needs Options.Egress") {
		t.Errorf("the allowlist without a proxy: %v", err)
	}
}
