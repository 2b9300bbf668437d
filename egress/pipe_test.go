package egress

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/testwait"
)

// acceptOne serves a listener on loopback and hands the test the
// connection it accepts, for the test to play the upstream by hand.
func acceptOne(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 1) // nil: the listener closed first
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, _ := l.Accept()
		conns <- c
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		select {
		case c := <-conns: // unread by the test
			if c != nil {
				c.Close()
			}
		default:
		}
	})
	return l.Addr().String(), conns
}

// upstreamConn is the connection acceptOne accepted, which the test
// closes; it fails the test if none came.
func upstreamConn(t *testing.T, conns <-chan net.Conn) net.Conn {
	t.Helper()
	c := testwait.Recv(t, conns, "the proxy's connection to the upstream")
	if c == nil {
		t.Fatal("the upstream's listener closed before the proxy connected")
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readToEOF reads c to its end, and fails the test unless the end is
// EOF within testwait.Limit.
func readToEOF(t *testing.T, c net.Conn, what string) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(testwait.Limit))
	b, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: no end within %v (read %d bytes)", what, testwait.Limit, len(b))
	}
	if err != nil {
		t.Fatalf("%s: %v after %d bytes; want EOF", what, err, len(b))
	}
	return b
}

// TestHalfClosePassesOn: when one side of a tunnel closes its write half,
// the other side's write half is shut down and the tunnel lives on the
// other way: a client that sends its request and then shuts down writing
// (as a server that reads to EOF wants) still gets the whole response,
// and an upstream that sends all and shuts down writing still gets what
// the client sends after it read the end.
func TestHalfClosePassesOn(t *testing.T) {
	t.Parallel()
	t.Run("client first", func(t *testing.T) {
		t.Parallel()
		addr, conns := acceptOne(t)
		proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}, IdleTimeout: time.Hour})
		c, line := dialTunnel(t, proxy, addr)
		defer c.Close()
		if !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatal(line)
		}
		up := upstreamConn(t, conns)
		io.WriteString(c, "the whole request")
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if got := readToEOF(t, up, "the upstream's read of the request"); string(got) != "the whole request" {
			t.Errorf("the upstream read %q", got)
		}
		var resp bytes.Buffer
		writePattern(&resp, 1<<20)
		go func() { up.Write(resp.Bytes()); up.Close() }()
		if got := readToEOF(t, c, "the client's read of the response"); !bytes.Equal(got, resp.Bytes()) {
			t.Errorf("the client read %d bytes, want the %d of the response", len(got), resp.Len())
		}
	})
	t.Run("upstream first", func(t *testing.T) {
		t.Parallel()
		addr, conns := acceptOne(t)
		proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}, IdleTimeout: time.Hour})
		c, line := dialTunnel(t, proxy, addr)
		defer c.Close()
		if !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatal(line)
		}
		up := upstreamConn(t, conns)
		io.WriteString(up, "all the upstream says")
		if err := up.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if got := readToEOF(t, c, "the client's read of the upstream's words"); string(got) != "all the upstream says" {
			t.Errorf("the client read %q", got)
		}
		io.WriteString(c, "said after the end")
		c.(*net.TCPConn).CloseWrite()
		if got := readToEOF(t, up, "the upstream's read of the client's words"); string(got) != "said after the end" {
			t.Errorf("the upstream read %q", got)
		}
	})
}

// TestHalfClosedIdle: a tunnel one side of which has shut down writing is
// closed once it has been idle for the shorter half-closed bound, not the
// whole idle timeout (an hour here), whichever side it was.
func TestHalfClosedIdle(t *testing.T) {
	t.Parallel()
	short := func(p *Proxy) { p.halfIdle = 100 * time.Millisecond }
	t.Run("client half-closed", func(t *testing.T) {
		t.Parallel()
		addr, conns := acceptOne(t)
		proxy, _ := startProxyTuned(t, Options{Allow: []string{"127.0.0.1"}, IdleTimeout: time.Hour}, short)
		c, line := dialTunnel(t, proxy, addr)
		defer c.Close()
		if !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatal(line)
		}
		upstreamConn(t, conns) // silent, and never closed before the test ends
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		readToEOF(t, c, "the client's read once the half-closed tunnel idled out")
	})
	t.Run("upstream half-closed", func(t *testing.T) {
		t.Parallel()
		addr, conns := acceptOne(t)
		proxy, _ := startProxyTuned(t, Options{Allow: []string{"127.0.0.1"}, IdleTimeout: time.Hour}, short)
		c, line := dialTunnel(t, proxy, addr)
		defer c.Close() // silent until then
		if !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatal(line)
		}
		up := upstreamConn(t, conns)
		if err := up.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		readToEOF(t, up, "the upstream's read once the half-closed tunnel idled out")
	})
}
