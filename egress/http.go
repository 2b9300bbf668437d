package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// http serves an HTTP proxy request: CONNECT opens a tunnel (TLS passes
// through untouched); a request in absolute form ("GET http://host/…") is
// sent on, with "Connection: close" both ways, so that every request on a
// connection is checked (a client sends its next one on a new
// connection).
func (s *session) http() {
	req, err := http.ReadRequest(s.br)
	if err != nil {
		s.malformed("", BadRequest, err)
		return
	}
	// The body of a refusal reaches the command through a plain request
	// (curl prints it), not through a CONNECT's or a HEAD's answer.
	s.shows = req.Method != http.MethodConnect && req.Method != http.MethodHead
	if req.Method == http.MethodConnect {
		s.connectHTTP(req)
		return
	}
	s.forward(req)
}

// connectHTTP answers CONNECT host:port.
func (s *session) connectHTTP(req *http.Request) {
	host, port, err := hostPort(req.RequestURI)
	if err != nil {
		s.malformed("", BadDestination, fmt.Errorf("CONNECT %q: %w", req.RequestURI, err))
		return
	}
	up, ref := s.connect(host, port)
	if ref != nil {
		s.refuseHTTP(ref, statusOf(ref))
		return
	}
	defer up.Close()
	if _, err := io.WriteString(s.c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if !s.flushBuffered(up) {
		return
	}
	s.p.tunnel(s.c, up)
}

// flushBuffered sends on what the client sent after its request, which
// the request's reader holds, and lifts the request's deadline.
func (s *session) flushBuffered(up net.Conn) bool {
	_ = s.c.SetReadDeadline(time.Time{})
	if n := s.br.Buffered(); n > 0 {
		b, _ := s.br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return false
		}
	}
	return true
}

// forward sends a plain HTTP request on and its response back.
func (s *session) forward(req *http.Request) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		s.malformed("", Unsupported, fmt.Errorf("%s %q is not a proxy request (an absolute http:// URL, or CONNECT)", req.Method, req.RequestURI))
		return
	}
	host, port := req.URL.Hostname(), 80
	if ps := req.URL.Port(); ps != "" {
		p, err := strconv.Atoi(ps)
		if err != nil {
			s.malformed(host, BadDestination, fmt.Errorf("port %q: %w", ps, err))
			return
		}
		port = p
	}
	up, ref := s.connect(host, port)
	if ref != nil {
		s.refuseHTTP(ref, statusOf(ref))
		return
	}
	defer up.Close()
	// The body is not bounded: it streams through, each read renewing
	// the idle deadline.
	s.lr.N, s.lr.R = 1<<62, &idleConn{Conn: s.c, idle: s.p.idle}
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Keep-Alive"} {
		req.Header.Del(h)
	}
	req.Close = true
	_ = up.SetDeadline(time.Now().Add(s.p.idle))
	if err := req.Write(&idleConn{Conn: up, idle: s.p.idle}); err != nil {
		return
	}
	// The upstream's header is bounded as the client's is; its body
	// streams through.
	ulr := &io.LimitedReader{R: &idleConn{Conn: up, idle: s.p.idle}, N: maxHeader}
	resp, err := http.ReadResponse(bufio.NewReaderSize(ulr, 4<<10), req)
	if err != nil {
		// err may quote the upstream's bytes: the refusal's Cause, which
		// does not, is what the command and the model read.
		cause := responseCause(err, ulr.N <= 0)
		if cause == ResponseTooLarge {
			err = fmt.Errorf("the response header is longer than %d bytes", maxHeader)
		}
		s.refuseHTTP(s.refused(&Refusal{Owner: s.owner, Host: normalize(host), Port: port, Reason: Unreachable, Cause: cause, Err: err, told: true}), http.StatusBadGateway)
		return
	}
	ulr.N = 1 << 62
	defer resp.Body.Close()
	resp.Close = true
	_ = resp.Write(&idleConn{Conn: s.c, idle: s.p.idle})
}

// idleConn renews a connection's deadline before each read and write.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	_ = c.SetWriteDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}

// malformed refuses a request the proxy could not read, unless the
// client went away before it asked.
func (s *session) malformed(host string, cause Cause, err error) {
	switch {
	case s.lr.N <= 0:
		cause, err = RequestTooLarge, fmt.Errorf("the request is longer than %d bytes", maxHeader)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return
	}
	s.refuseHTTP(s.refused(&Refusal{Owner: s.owner, Host: normalize(host), Reason: Malformed, Cause: cause, Err: err}), http.StatusBadRequest)
}

// statusOf is the HTTP status of a refusal.
func statusOf(r *Refusal) int {
	switch r.Reason {
	case Unreachable:
		return http.StatusBadGateway
	case Busy:
		return http.StatusServiceUnavailable
	case Malformed:
		return http.StatusBadRequest
	}
	return http.StatusForbidden
}

// refuseHTTP answers with status and the refusal's text, and closes.
func (s *session) refuseHTTP(r *Refusal, status int) {
	body := s.p.RefusalText(r) + "\n"
	reason := http.StatusText(status)
	_ = s.c.SetWriteDeadline(time.Now().Add(s.p.header))
	fmt.Fprintf(s.c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Dsh-Refused: %s\r\n\r\n%s",
		status, reason, len(body), headerSafe(r.Error()), body)
}

// headerSafe keeps a header value on one line.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
