//go:build linux

package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// countingServer is a server on the host's loopback (at addr, default
// 127.0.0.1) that answers "hello from NAME" and counts its connections.
func countingServer(t *testing.T, name string, addr ...string) (port string, conns *atomic.Int64) {
	conns = new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", name)
	}))
	if len(addr) > 0 {
		l, err := net.Listen("tcp", addr[0])
		if err != nil {
			t.Skipf("no %s here: %v", addr[0], err)
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return port, conns
}

// reservePort binds the host's 127.0.0.1 at port without listening, so
// that nothing answers there while the test runs.
func reservePort(t *testing.T, port string) {
	n, _ := strconv.Atoi(port)
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: n, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Skipf("127.0.0.1:%s is taken: %v", port, err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
}

// TestMCPHostService: services on the host's loopback that the user
// allows with their ports are where the MCP instructions say, in the
// jail, for curl and for a client that ignores proxy variables (bash's
// /dev/tcp); localhost's is reached at 127.0.0.1 in the jail though the
// host serves it on ::1 alone; another port of the host's loopback is
// not reached, and its service sees nothing.
func TestMCPHostService(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	requireCurl(t)
	port, conns := countingServer(t, "the host")
	otherPort, otherConns := countingServer(t, "another service")
	devPort, _ := countingServer(t, "the dev server", "[::1]:0")
	reservePort(t, devPort)
	cs, _ := mcpClient(t, "--sandbox=jail", "--sandbox-network=allowlist", "--allow-domain", "127.0.0.1:"+port, "--allow-domain", "localhost:"+devPort,
		"--default-domains=false", "--cwd", t.TempDir())
	instr := cs.InitializeResult().Instructions
	for _, want := range []string{
		"it lets through the hosts on the allowlist (none)",
		fmt.Sprintf("127.0.0.1:%s on the host is forwarded to 127.0.0.1:%s in the sandbox; localhost:%s on the host is forwarded to localhost:%s in the sandbox.", port, port, devPort, devPort),
	} {
		if !strings.Contains(instr, want) {
			t.Errorf("the instructions do not say %q: %s", want, instr)
		}
	}
	get := `printf 'GET / HTTP/1.0\r\n\r\n' >&3 && tail -n1 <&3`
	for _, c := range []struct{ cmd, want string }{
		{"curl -sS http://127.0.0.1:" + port + "/", "hello from the host\n"},
		{"exec 3<>/dev/tcp/127.0.0.1/" + port + " && " + get, "hello from the host\n"},
		{"(exec 3<>/dev/tcp/127.0.0.1/" + otherPort + ") 2>/dev/null && echo connected || echo refused", "refused\n"},
		{"exec 3<>/dev/tcp/127.0.0.1/" + devPort + " && " + get, "hello from the dev server\n"},
		{"curl -sS http://localhost:" + devPort + "/", "hello from the dev server\n"},
	} {
		if got := callText(t, cs, "bash", map[string]any{"command": c.cmd, "description": "Reach the host"}); got != c.want {
			t.Errorf("%s: %q, want %q", c.cmd, got, c.want)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("the allowed service saw %d connections, want 2", n)
	}
	if n := otherConns.Load(); n != 0 {
		t.Errorf("the other service saw %d connections, want none", n)
	}
}

// TestHostServiceRules: a rule for the host's loopback that cannot be
// forwarded is a usage error that says how to name the port, from a flag
// or the config file; so are the proxy's port, one address forwarded
// twice, a forward a deny rule refuses, and the rules with --remote (they
// are the far side's); doctor lists what is forwarded where.
func TestHostServiceRules(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	allowlist := []string{"doctor", "--sandbox=jail", "--sandbox-network=allowlist", "--default-domains=false"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow-domain", "127.0.0.1"}, "--allow-domain 127.0.0.1 (or allowDomains in the config file): a jail's loopback is its own, and a service on the host's is reached from the jails only at a port you name, which is then forwarded to the same address in each jail: give the port, as 127.0.0.1:5432, localhost:8080 or [::1]:6379"},
		{[]string{"--allow-domain", "localhost"}, "--allow-domain localhost (or allowDomains"},
		{[]string{"--allow-domain", "127.0.0.0/8"}, "--allow-domain 127.0.0.0/8 (or allowDomains"},
		{[]string{"--allow-domain", "127.0.0.1:3128"}, "--allow-domain 127.0.0.1:3128 (or allowDomains in the config file): port 3128 is the jail's proxy's (127.0.0.1:3128)"},
		{[]string{"--allow-domain", "127.0.0.1:5432", "--allow-domain", "localhost:5432"}, "--allow-domain localhost:5432 (or allowDomains in the config file): forwarded twice"},
		{[]string{"--allow-domain", "127.0.0.1:5432", "--deny-domain", "127.0.0.0/8"}, "--allow-domain 127.0.0.1:5432: the rule --deny-domain 127.0.0.0/8 refuses it"},
	} {
		out, errOut, code := dshBash(t, ws, append(allowlist, tc.args...)...)
		if code != 2 || !strings.Contains(out, "executor: cannot be made with these settings: "+tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a usage error saying %q", tc.args, code, out, errOut, tc.want)
		}
	}
	conf := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(conf, []byte(`{"sandbox": {"network": "allowlist", "allowDomains": ["localhost"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := dshBashEnv(t, ws, []string{"DSH_BASH_CONFIG=" + conf}, "doctor", "--sandbox=jail"); code != 2 || !strings.Contains(out, "--allow-domain localhost (or allowDomains in the config file)") {
		t.Errorf("allowDomains [localhost]: exit %d, stdout %q; want a usage error", code, out)
	}
	far := binary + " executor --sandbox=off --cwd " + ws
	if _, errOut, code := dshBash(t, ws, "run", "--executor-cmd", far, "--allow-domain", "127.0.0.1:5432", "--", "true"); code != 2 || !strings.Contains(errOut, "give them to the far side") {
		t.Errorf("--allow-domain with --executor-cmd: exit %d, stderr %q; want a usage error", code, errOut)
	}
	requireBwrap(t)
	out, errOut, code := dshBash(t, ws, append(allowlist, "--allow-domain", "127.0.0.1:5432", "--allow-domain", "localhost:8080", "--allow-domain", "10.0.0.5:5432")...)
	for _, want := range []string{"which lets through:\n  127.0.0.1:5432\n  localhost:8080\n  10.0.0.5:5432\n",
		"host services forwarded into each jail, at the same address of its loopback, where any client reaches them (not through the proxy):\n" +
			"  127.0.0.1:5432 on the host -> 127.0.0.1:5432 in the jail\n" +
			"  localhost:8080 on the host -> 127.0.0.1:8080 and [::1]:8080 (where the jail has IPv6) in the jail\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("doctor with host services: exit %d, no %q in stdout %q (stderr %q)", code, want, out, errOut)
		}
	}
	out, errOut, code = dshBash(t, ws, allowlist...)
	if code != 0 || !strings.Contains(out, "host services forwarded into each jail: none (a service on the host's loopback is allowed with its port: --allow-domain 127.0.0.1:5432, localhost:8080, [::1]:6379)\n") {
		t.Errorf("doctor without host services: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
