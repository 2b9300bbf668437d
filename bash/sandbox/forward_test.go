//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/testwait"
	"golang.org/x/sys/unix"
)

// hostService is a server on the host's loopback (a database, a dev
// server) that answers each HTTP request with "hello from NAME", and
// counts the connections it gets.
type hostService struct {
	addr  netip.AddrPort
	conns atomic.Int64
}

func newHostService(t *testing.T, network, addr, name string) *hostService {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s here: %v", addr, err)
	}
	s := &hostService{addr: netip.MustParseAddrPort(l.Addr().String())}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", name)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return s
}

// reservePort binds the host's 127.0.0.1 at port without listening, so
// that nothing else answers there while the test runs: a connection is
// refused.
func reservePort(t *testing.T, port uint16) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		t.Skipf("127.0.0.1:%d is taken: %v", port, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
}

// TestForwardHostService: services on the host's loopback that the
// allowlist forwards are reached from a real jail at their own address,
// by curl (which NO_PROXY sends to the jail's loopback) and by clients
// that ignore proxy variables (bash's /dev/tcp, python's socket); a
// localhost service is reached on whichever loopback address the host
// serves it; a port not forwarded stays unreachable, directly and
// through the proxy, and its service sees no connection; and the rest
// of the jail's loopback is the session's, for its own servers.
func TestForwardHostService(t *testing.T) {
	t.Parallel()
	db := newHostService(t, "tcp4", "127.0.0.1:0", "the database")
	other := newHostService(t, "tcp4", "127.0.0.1:0", "a service not forwarded")
	dev := newHostService(t, "tcp6", "[::1]:0", "the dev server") // as a dev server bound to localhost may be
	reservePort(t, dev.addr.Port())
	devPort := dev.addr.Port()
	v4, v6 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), devPort), netip.AddrPortFrom(netip.IPv6Loopback(), devPort)
	p, err := egress.New(&egress.Options{
		Allow:       []string{db.addr.String(), fmt.Sprintf("localhost:%d", devPort)},
		RefusalText: func(r *egress.Refusal) string { return "REFUSED: " + r.Error() },
		Ask: func(context.Context, egress.Question) (egress.Decision, error) {
			t.Error("the proxy asked about a forwarded service")
			return egress.Deny, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	fs := []Forward{
		{Listen: db.addr, To: []netip.AddrPort{db.addr}},
		{Listen: v4, To: []netip.AddrPort{v4, v6}},
		{Listen: v6, To: []netip.AddrPort{v6, v4}, Optional: true},
	}
	ws := t.TempDir()
	e, err := newSandbox(t, &Options{Layer: LayerJail, Policy: Policy{Network: NetworkAllowlist, Forward: fs}, Egress: p, Local: &local.Options{Cwd: ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	dbPort, otherPort := db.addr.Port(), other.addr.Port()
	get := `printf 'GET / HTTP/1.0\r\n\r\n' >&3 && tail -n1 <&3`
	rows := []struct{ name, cmd, want string }{
		{"curl", fmt.Sprintf("curl -sS http://127.0.0.1:%d/", dbPort), "hello from the database\n"},
		{"bash's /dev/tcp", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && %s", dbPort, get), "hello from the database\n"},
		{"localhost", fmt.Sprintf("curl -sS http://localhost:%d/", devPort), "hello from the dev server\n"},
		{"127.0.0.1 of a service on ::1", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && %s", devPort, get), "hello from the dev server\n"},
		{"a port not forwarded", fmt.Sprintf("(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo connected || echo refused; curl --noproxy '' -sS http://127.0.0.1:%d/", otherPort, otherPort),
			fmt.Sprintf("refused\nREFUSED: egress: 127.0.0.1:%d is the local address 127.0.0.1, which no rule allows\n", otherPort)},
		// A server of the session's own, on a port of the jail's loopback
		// it chose: ready once it printed the port.
		{"the session's own server", `exec 3< <(perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Listen => 1) or die "listen: $!"; $| = 1; print $s->sockport, "\n"; $c = $s->accept; while (<$c>) { last if /^\r?\n$/ } print $c "HTTP/1.0 200 OK\r\n\r\nhello from the jail\n"; close $c') && read -r port <&3 && curl -sS http://127.0.0.1:$port/`,
			"hello from the jail\n"},
	}
	dbConns := int64(2)
	if _, err := exec.LookPath("python3"); err == nil {
		dbConns++
		rows = append(rows, struct{ name, cmd, want string }{"python's socket",
			fmt.Sprintf(`python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", %d)); s.sendall(b"GET / HTTP/1.0\r\n\r\n"); print(b"".join(iter(lambda: s.recv(4096), b"")).decode().splitlines()[-1])'`, dbPort),
			"hello from the database\n"})
	}
	// Counted once every client has run (the subtests are parallel: the
	// test's cleanups run after them).
	t.Cleanup(func() {
		if n := other.conns.Load(); n != 0 {
			t.Errorf("the service not forwarded saw %d connections, want none", n)
		}
		if n := db.conns.Load(); n != dbConns {
			t.Errorf("the database saw %d connections, want %d", n, dbConns)
		}
	})
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			if got := runIn(t, e, ws, row.cmd); got != row.want {
				t.Errorf("%s\ngot  %q\nwant %q", row.cmd, got, row.want)
			}
		})
	}
}

// runIn runs cmd in the session "o"'s jail, within a minute, and returns
// its stdout (its stderr where stdout is empty).
func runIn(t *testing.T, e *Executor, ws, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	spec, err := e.Resolve(ctx, bash.ExecRequest{Owner: "o", Workspace: ws, Workdir: ws, Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout.Text == "" {
		return res.Stderr.Text
	}
	return res.Stdout.Text
}

// fakeForwarder records the listeners it is given, for the tests of
// what the host takes from the agent, and serves each until it is
// closed.
type fakeForwarder struct {
	nopEgress
	forwarded chan netip.AddrPort // each listener's address
	returned  chan struct{}       // a Forward returned: its listener was closed
}

func newFakeForwarder() fakeForwarder {
	return fakeForwarder{nopEgress{make(chan net.Listener, 1)}, make(chan netip.AddrPort, 2), make(chan struct{}, 2)}
}

func (f fakeForwarder) Forward(l net.Listener, owner string, to []netip.AddrPort) error {
	f.forwarded <- netip.MustParseAddrPort(l.Addr().String())
	for {
		c, err := l.Accept()
		if err != nil {
			f.returned <- struct{}{}
			return nil
		}
		c.Close()
	}
}

// TestForwardListenersChecked: with the proxy's listener, the agent of a
// jail with forwards sends one listening TCP socket for each, bound at
// its address, in order; it may go without an optional one, and nothing
// else: a listener at another address, in another order, of the other
// family, a file, or a skip of one that is not optional, is refused, and
// ends the jail.
func TestForwardListenersChecked(t *testing.T) {
	// listen is a listener at addr until the test ends, and a function
	// that gives a descriptor of it each time it is called.
	listen := func(t *testing.T, network, addr string) (func() int, netip.AddrPort) {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("no %s here: %v", addr, err)
		}
		t.Cleanup(func() { l.Close() })
		return func() int { return dupOf(t, l.(*net.TCPListener)) }, netip.MustParseAddrPort(l.Addr().String())
	}
	type fds struct{ proxy, a, b, other func() int }
	for _, tc := range []struct {
		name    string
		fds     func(t *testing.T, f fds) []int
		skipped []int
		ok      bool
	}{
		{"each", func(t *testing.T, f fds) []int { return []int{f.proxy(), f.a(), f.b()} }, nil, true},
		{"the optional one skipped", func(t *testing.T, f fds) []int { return []int{f.proxy(), f.a()} }, []int{1}, true},
		{"one that is not optional skipped", func(t *testing.T, f fds) []int { return []int{f.proxy(), f.b()} }, []int{0}, false},
		{"a skip out of range", func(t *testing.T, f fds) []int { return []int{f.proxy(), f.a()} }, []int{2}, false},
		{"a skip twice", func(t *testing.T, f fds) []int { return []int{f.proxy()} }, []int{1, 1}, false},
		{"in another order", func(t *testing.T, f fds) []int { return []int{f.proxy(), f.b(), f.a()} }, nil, false},
		{"at another address", func(t *testing.T, f fds) []int { return []int{f.proxy(), f.other(), f.b()} }, nil, false},
		{"a file", func(t *testing.T, f fds) []int { return []int{f.proxy(), f.a(), devNulls(t, 1)[0]} }, nil, false},
		{"one short", func(t *testing.T, f fds) []int { return []int{f.proxy(), f.a()} }, nil, false},
		{"the proxy's alone", func(t *testing.T, f fds) []int { return []int{f.proxy()} }, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f fds
			f.proxy, _ = listen(t, "tcp4", "127.0.0.1:0")
			f.other, _ = listen(t, "tcp4", "127.0.0.1:0")
			var a, b netip.AddrPort
			f.a, a = listen(t, "tcp4", "127.0.0.1:0")
			f.b, b = listen(t, "tcp4", "127.0.0.1:0")
			fw := newFakeForwarder()
			j := newJail("k", "o")
			j.egress = fw
			j.forwards = []Forward{{Listen: a, To: []netip.AddrPort{a}}, {Listen: b, To: []netip.AddrPort{b}, Optional: true}}
			err := j.dispatch(agentMsg{Started: true, Skipped: tc.skipped}, tc.fds(t, f))
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, errProtocol) {
				t.Fatalf("dispatch: %v, want ok %v or a protocol error", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			testwait.Recv(t, fw.served, "the proxy listener")
			want := []netip.AddrPort{a, b}[:2-len(tc.skipped)]
			var got []netip.AddrPort
			for range want {
				got = append(got, testwait.Recv(t, fw.forwarded, "a forward listener"))
			}
			slices.SortFunc(got, netip.AddrPort.Compare)
			slices.SortFunc(want, netip.AddrPort.Compare)
			if !slices.Equal(got, want) {
				t.Errorf("forwarded %v, want %v", got, want)
			}
			j.closeProxy()
			for range want {
				testwait.Recv(t, fw.returned, "Forward's return once the jail closed its listener")
			}
		})
	}
	t.Run("a connected socket at its address", func(t *testing.T) {
		proxy, _ := listen(t, "tcp4", "127.0.0.1:0")
		_, server := listen(t, "tcp4", "127.0.0.1:0")
		c, err := net.Dial("tcp4", server.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		at := netip.MustParseAddrPort(c.LocalAddr().String())
		j := newJail("k", "o")
		j.egress = newFakeForwarder()
		j.forwards = []Forward{{Listen: at, To: []netip.AddrPort{server}}}
		if err := j.dispatch(agentMsg{Started: true}, []int{proxy(), dupOf(t, c.(*net.TCPConn))}); !errors.Is(err, errProtocol) {
			t.Errorf("dispatch: %v, want a protocol error", err)
		}
	})
	t.Run("of the other family", func(t *testing.T) {
		proxy, _ := listen(t, "tcp4", "127.0.0.1:0")
		v6, at := listen(t, "tcp6", "[::1]:0")
		j := newJail("k", "o")
		j.egress = newFakeForwarder()
		// The IPv4 address at the same port.
		j.forwards = []Forward{{Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), at.Port()), To: []netip.AddrPort{at}}}
		if err := j.dispatch(agentMsg{Started: true}, []int{proxy(), v6()}); !errors.Is(err, errProtocol) {
			t.Errorf("dispatch: %v, want a protocol error", err)
		}
	})
}

// TestForwardListenersOptional: the agent goes without the listener of an
// optional forward at an address its network namespace lacks, and fails
// on one that is not optional.
func TestForwardListenersOptional(t *testing.T) {
	absent := netip.MustParseAddrPort("192.0.2.1:8080") // TEST-NET-1: no interface has it
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := netip.MustParseAddrPort(l.Addr().String())
	l.Close()
	fds, skipped, err := forwardListeners([]agentForward{{Listen: free}, {Listen: absent, Optional: true}})
	if err != nil || len(fds) != 1 || len(skipped) != 1 || skipped[0] != 1 {
		t.Errorf("an optional forward at an absent address: %v, %v, %v; want one listener, and 1 skipped", fds, skipped, err)
	}
	closeFDs(fds)
	if fds, _, err := forwardListeners([]agentForward{{Listen: absent}}); !errors.Is(err, unix.EADDRNOTAVAIL) {
		closeFDs(fds)
		t.Errorf("a forward at an absent address: %v, want EADDRNOTAVAIL", err)
	}
}

// TestCheckForwards: forwards a jail cannot have are refused before any
// starts.
func TestCheckForwards(t *testing.T) {
	ap := netip.MustParseAddrPort
	to := []netip.AddrPort{ap("127.0.0.1:5432")}
	ok := []Forward{{Listen: ap("127.0.0.1:5432"), To: to}, {Listen: ap("[::1]:5432"), To: to}, {Listen: ap("127.0.0.2:80"), To: to}}
	if err := CheckForwards(ok); err != nil {
		t.Errorf("CheckForwards(%v) = %v", ok, err)
	}
	many := make([]Forward, maxForwards+1)
	for i := range many {
		many[i] = Forward{Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(1000+i)), To: to}
	}
	for _, tc := range []struct {
		name string
		fs   []Forward
		why  string
	}{
		{"the proxy's port", []Forward{{Listen: ap("127.0.0.1:3128"), To: to}}, "port 3128 is the jail's proxy's"},
		{"the proxy's port on ::1", []Forward{{Listen: ap("[::1]:3128"), To: to}}, "port 3128 is the jail's proxy's"},
		{"twice", []Forward{{Listen: ap("127.0.0.1:5432"), To: to}, {Listen: ap("127.0.0.1:5432"), To: to}}, "forwarded twice"},
		{"not loopback", []Forward{{Listen: ap("10.0.0.5:5432"), To: to}}, "not an address of the loopback"},
		{"mapped", []Forward{{Listen: ap("[::ffff:127.0.0.1]:5432"), To: to}}, "not an address of the loopback"},
		{"no port", []Forward{{Listen: ap("127.0.0.1:0"), To: to}}, "no port"},
		{"nowhere", []Forward{{Listen: ap("127.0.0.1:5432")}}, "nowhere to connect to"},
		{"too many", many, "more than 63 forwards"},
	} {
		err := CheckForwards(tc.fs)
		var fe *ForwardError
		if !errors.As(err, &fe) || !strings.Contains(fe.Why, tc.why) {
			t.Errorf("%s: %v, want a ForwardError saying %q", tc.name, err, tc.why)
		}
	}
}

// TestForwardsNeedTheAllowlist: forwards are the allowlist's, and need a
// Forwarder.
func TestForwardsNeedTheAllowlist(t *testing.T) {
	t.Parallel()
	fw := []Forward{{Listen: netip.MustParseAddrPort("127.0.0.1:5432"), To: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}}}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"the network on", Options{Policy: Policy{Forward: fw}}, "needs NetworkAllowlist"},
		{"the network off", Options{Policy: Policy{Network: NetworkOff, Forward: fw}}, "needs NetworkAllowlist"},
		{"no Forwarder", Options{Policy: Policy{Network: NetworkAllowlist, Forward: fw}, Egress: nopEgress{}}, "a Forwarder"},
		{"the proxy's port", Options{Policy: Policy{Network: NetworkAllowlist, Forward: []Forward{{Listen: netip.MustParseAddrPort("127.0.0.1:3128"), To: fw[0].To}}},
			Egress: fakeForwarder{}}, "port 3128"},
	} {
		if _, err := New(t.Context(), &tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
