package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/testwait"
)

// TestForwards: the allow rules that name the host's loopback with a
// port are its services a jail is given; one without a port, or one a
// deny rule refuses, cannot be.
func TestForwards(t *testing.T) {
	fs, err := Forwards([]string{"registry.test", "127.0.0.1:5432", "10.0.0.5:5432", "localhost:8080", "[::1]:6379", "127.0.0.2:80", "x.test:443", "0.0.0.0/0"},
		[]string{"127.0.0.1:5433", "registry.test"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Forward{
		{"127.0.0.1:5432", []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}},
		{"localhost:8080", []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8080"), netip.MustParseAddrPort("[::1]:8080")}},
		{"[::1]:6379", []netip.AddrPort{netip.MustParseAddrPort("[::1]:6379")}},
		{"127.0.0.2:80", []netip.AddrPort{netip.MustParseAddrPort("127.0.0.2:80")}},
	}
	if !slices.EqualFunc(fs, want, func(a, b Forward) bool { return a.Rule == b.Rule && slices.Equal(a.Addrs, b.Addrs) }) {
		t.Errorf("Forwards = %v, want %v", fs, want)
	}
	for _, tc := range []struct {
		allow, deny []string
		want        ForwardError
	}{
		{[]string{"127.0.0.1"}, nil, ForwardError{Rule: "127.0.0.1"}},
		{[]string{"localhost"}, nil, ForwardError{Rule: "localhost"}},
		{[]string{"[::1]"}, nil, ForwardError{Rule: "[::1]"}},
		{[]string{"::ffff:127.0.0.1"}, nil, ForwardError{Rule: "::ffff:127.0.0.1"}},
		{[]string{"127.0.0.0/8"}, nil, ForwardError{Rule: "127.0.0.0/8"}},
		{[]string{"127.0.0.1:5432"}, []string{"127.0.0.0/8"}, ForwardError{Rule: "127.0.0.1:5432", Deny: "127.0.0.0/8"}},
		{[]string{"localhost:8080"}, []string{"::1"}, ForwardError{Rule: "localhost:8080", Deny: "::1"}},
		{[]string{"localhost:8080"}, []string{"localhost"}, ForwardError{Rule: "localhost:8080", Deny: "localhost"}},
		{[]string{"[::1]:6379"}, []string{"*"}, ForwardError{Rule: "[::1]:6379", Deny: "*"}},
	} {
		_, err := Forwards(tc.allow, tc.deny)
		var fe *ForwardError
		if !errors.As(err, &fe) || *fe != tc.want {
			t.Errorf("Forwards(%q, %q) = %v, want %+v", tc.allow, tc.deny, err, tc.want)
		}
	}
	if _, err := Forwards([]string{"x.com:http"}, nil); err == nil {
		t.Error("a rule that is none: no error")
	}
}

// echoServer is a service on the host's loopback that echoes what it
// reads and counts its connections.
type echoServer struct {
	addr  netip.AddrPort
	conns atomic.Int64
}

func newEchoServer(t *testing.T) *echoServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{addr: netip.MustParseAddrPort(l.Addr().String())}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c); c.Close() })
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) netip.AddrPort {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return netip.MustParseAddrPort(l.Addr().String())
}

// startForward has the proxy forward a listener of its own (the jail's,
// in package sandbox) to to, for the session "s1", and returns where to
// connect.
func startForward(t *testing.T, p *Proxy, to ...netip.AddrPort) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Forward(l, "s1", to) }()
	t.Cleanup(func() {
		l.Close()
		if err := testwait.Recv(t, served, "Forward's return"); err != nil {
			t.Errorf("Forward after its listener closed = %v, want nil", err)
		}
	})
	return l.Addr().String()
}

// echo writes msg through c and reads what comes back.
func echo(t *testing.T, c net.Conn, msg string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(testwait.Limit))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	b := make([]byte, len(msg))
	n, err := io.ReadFull(c, b)
	return string(b[:n]), err
}

// refusalLog collects what Options.Refused is told.
type refusalLog chan *Refusal

func (r refusalLog) add(ref *Refusal) { r <- ref }

// TestForward: Proxy.Forward connects each connection to the service the
// rules allow at its port, asking nobody, trying the addresses in order;
// it refuses one no allow rule names, or a deny rule does, and says so
// when the service does not answer; and its connections count against
// the bounds.
func TestForward(t *testing.T) {
	svc := newEchoServer(t)
	down := closedPort(t)
	refused := make(refusalLog, 8)
	noAsk := func(context.Context, Question) (Decision, error) {
		t.Error("Forward asked the user")
		return AllowOnce, nil
	}
	newProxy := func(t *testing.T, o Options) *Proxy {
		o.Ask, o.Refused = noAsk, refused.add
		p, err := New(&o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	dial := func(t *testing.T, addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedAtOnce := func(t *testing.T, c net.Conn) {
		t.Helper()
		if got, err := echo(t, c, "ping"); err == nil {
			t.Errorf("the connection echoed %q, want it closed", got)
		}
	}
	t.Run("allowed", func(t *testing.T) {
		p := newProxy(t, Options{Allow: []string{svc.addr.String()}})
		before := svc.conns.Load()
		c := dial(t, startForward(t, p, svc.addr))
		if got, err := echo(t, c, "ping"); got != "ping" || err != nil {
			t.Errorf("through the forward: %q, %v; want ping", got, err)
		}
		if n := svc.conns.Load() - before; n != 1 {
			t.Errorf("the service saw %d connections, want 1", n)
		}
	})
	t.Run("the next address", func(t *testing.T) {
		p := newProxy(t, Options{Allow: []string{down.String(), svc.addr.String()}})
		c := dial(t, startForward(t, p, down, svc.addr))
		if got, err := echo(t, c, "ping"); got != "ping" || err != nil {
			t.Errorf("past an address that does not answer: %q, %v; want ping", got, err)
		}
	})
	for _, tc := range []struct {
		name        string
		allow, deny []string
		why         Reason
	}{
		{"another port allowed", []string{"127.0.0.1:1"}, nil, Unlisted},
		{"denied", []string{svc.addr.String()}, []string{"127.0.0.0/8"}, Denied},
		{"all denied", []string{svc.addr.String()}, []string{"*"}, Denied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProxy(t, Options{Allow: tc.allow, Deny: tc.deny})
			before := svc.conns.Load()
			closedAtOnce(t, dial(t, startForward(t, p, svc.addr)))
			if r := testwait.Recv(t, refused, "the refusal"); r.Reason != tc.why || r.Owner != "s1" || r.Host != "127.0.0.1" || r.Port != int(svc.addr.Port()) {
				t.Errorf("refusal %+v, want %v of 127.0.0.1:%d for s1", r, tc.why, svc.addr.Port())
			}
			if n := svc.conns.Load() - before; n != 0 {
				t.Errorf("the service saw %d connections, want none", n)
			}
		})
	}
	t.Run("not answering", func(t *testing.T) {
		p := newProxy(t, Options{Allow: []string{down.String()}})
		closedAtOnce(t, dial(t, startForward(t, p, down)))
		if r := testwait.Recv(t, refused, "the refusal"); r.Reason != Unreachable || r.Err == nil || r.Host != "127.0.0.1" || r.Port != int(down.Port()) {
			t.Errorf("refusal %+v, want Unreachable %s", r, down)
		}
	})
	t.Run("bounded per session", func(t *testing.T) {
		p := newProxy(t, Options{Allow: []string{svc.addr.String()}, MaxConnsPerOwner: 1})
		at := startForward(t, p, svc.addr)
		c1 := dial(t, at)
		if got, err := echo(t, c1, "one"); got != "one" || err != nil {
			t.Fatalf("the first connection: %q, %v", got, err)
		}
		closedAtOnce(t, dial(t, at))
		if r := testwait.Recv(t, refused, "the refusal"); r.Reason != Busy || r.Max != 1 {
			t.Errorf("refusal %+v, want Busy at 1", r)
		}
	})
	t.Run("idle", func(t *testing.T) {
		p := newProxy(t, Options{Allow: []string{svc.addr.String()}, IdleTimeout: 200 * time.Millisecond})
		c := dial(t, startForward(t, p, svc.addr))
		if got, err := echo(t, c, "ping"); got != "ping" || err != nil {
			t.Fatalf("through the forward: %q, %v", got, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(testwait.Limit))
		if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("read of an idle forward: %d, %v; want EOF once the idle timeout closed it", n, err)
		}
	})
	t.Run("proxy closed", func(t *testing.T) {
		p := newProxy(t, Options{Allow: []string{svc.addr.String()}})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- p.Forward(l, "s1", []netip.AddrPort{svc.addr}) }()
		c := dial(t, l.Addr().String())
		if got, err := echo(t, c, "ping"); got != "ping" || err != nil {
			t.Fatalf("through the forward: %q, %v", got, err)
		}
		p.Close()
		if err := testwait.Recv(t, served, "Forward's return"); !errors.Is(err, ErrClosed) {
			t.Errorf("Forward after Close = %v, want ErrClosed", err)
		}
		if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("a forwarded connection after Close: %d, %v; want EOF", n, err)
		}
	})
	select {
	case r := <-refused:
		t.Errorf("a refusal no case expected: %+v", r)
	default:
	}
}
