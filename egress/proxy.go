package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dshgo/dsh/observe"
)

// Options configure a Proxy. A nil *Options, and each zero field, means
// the default the field names.
type Options struct {
	// Allow and Deny are the rules (see the package doc and DefaultAllow):
	// a destination a deny rule names is refused, one an allow rule names
	// is let through (to an address no deny rule names, and a local one
	// only where an address rule allows it), and any other is asked
	// about. Default: none, so every destination is asked about.
	Allow, Deny []string
	// Ask asks the user of the session about a destination no rule names;
	// nil (or an error) refuses it as Unlisted, and nothing is
	// remembered. A front end made after the proxy sets it with SetFront. Concurrent connections of a session to one host and
	// port wait for one question, and a session's questions are put one
	// at a time (see AskQueue). AllowSession is remembered for the host,
	// Deny for the host and port, and DenyAllNew for every host not yet
	// allowed, for the session, until EndOwner.
	Ask func(ctx context.Context, q Question) (Decision, error)
	// AskTimeout bounds the wait for the user's answer. Default 2 min.
	AskTimeout time.Duration
	// AskQueue bounds the questions of a session that wait for their
	// turn: its user is asked one question at a time, and a connection to
	// another destination no rule names, past the ones waiting, is
	// refused unasked, as TooManyQuestions. Default 4.
	AskQueue int
	// AskBurst and AskRefill rate the questions of a session: its user
	// may be asked AskBurst in a row, then one more each AskRefill (a
	// bucket of AskBurst tokens, one given back each AskRefill); a
	// connection that would ask one more is refused unasked, as
	// TooManyQuestions. Defaults 5 (the one asked and a full line) and
	// 30 s.
	AskBurst  int
	AskRefill time.Duration
	// RefusalText is the text a refused client reads (the body of the 403
	// response). Default: the Refusal's Error.
	RefusalText func(r *Refusal) string
	// Refused, if set, is told of every refusal (on the connection's
	// goroutine: it should return promptly). See SetFront.
	Refused func(r *Refusal)
	// Resolve looks a name up. Default: the system's resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// HostAddrs are this host's own addresses, refused like loopback
	// unless an address rule allows them (the host's services listen on
	// them too). Default: the addresses of its interfaces, read at each
	// check.
	HostAddrs func() []netip.Addr
	// Dial connects to an address the rules allow. Default: a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTimeout bounds a lookup and a connection. Default 30 s.
	DialTimeout time.Duration
	// MaxConns bounds the connections open at once, over every listener,
	// and MaxConnsPerOwner those of one session (so that one cannot take
	// them all); one past either is closed at once, and told to Refused as
	// Busy. Defaults 512, and a quarter of MaxConns.
	MaxConns, MaxConnsPerOwner int
	// IdleTimeout closes a connection along which nothing has moved, in
	// either direction, for this long. Default 5 min.
	IdleTimeout time.Duration
	// HeaderTimeout bounds the reading of a client's request. Default 30 s.
	HeaderTimeout time.Duration
	// Observe, if set, is told of the proxy's decision on each
	// connection (an *observe.Network), for the operators: allowed, with
	// the rule that allowed it, or refused, and why; and whether the user
	// was asked. It is called on the connection's goroutine.
	Observe observe.Sink
}

// Defaults of Options.
const (
	DefaultMaxConns      = 512
	DefaultIdleTimeout   = 5 * time.Minute
	DefaultHeaderTimeout = 30 * time.Second
	DefaultDialTimeout   = 30 * time.Second
	DefaultAskTimeout    = 2 * time.Minute
	DefaultAskQueue      = 4
	DefaultAskBurst      = 5
	DefaultAskRefill     = 30 * time.Second
)

// maxHeader bounds a client's request header (HTTP) or handshake (SOCKS).
const maxHeader = 64 << 10

// bufSize is the buffer of each direction of a connection.
const bufSize = 32 << 10

// Proxy is the allowlist proxy. Make one with New; Close it when done.
type Proxy struct {
	opts        Options
	allow, deny rules
	maxConns    int
	perOwner    int
	slotMu      sync.Mutex
	inUse       int            // connections open, over every owner
	ownerUse    map[string]int // connections open, by owner
	dialTimeout time.Duration
	askTimeout  time.Duration
	askQueue    int
	askBurst    int
	askRefill   time.Duration
	idle        time.Duration
	header      time.Duration
	halfIdle    time.Duration // halfClosedIdle, unless a test set it
	bufs        sync.Pool

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	front  atomic.Pointer[front]
	asked  asked
	// event, if set (by this package's tests, before Serve), is told of
	// what no other event announces: "waiting" (a connection waits for a
	// question another asked), "queued" (a connection's question waits
	// for its turn), "freed" (a connection's slot is free).
	event func(string)
	// clock is the time (time.Now, unless a test set it before Serve).
	clock func() time.Time

	mu     sync.Mutex
	open   map[io.Closer]struct{} // listeners and connections
	closed bool
	wg     sync.WaitGroup
}

// New makes a proxy; it fails on a rule it cannot read.
func New(o *Options) (*Proxy, error) {
	p := &Proxy{open: map[io.Closer]struct{}{}}
	if o != nil {
		p.opts = *o
	}
	var err error
	if p.allow, err = compile(p.opts.Allow); err != nil {
		return nil, err
	}
	if p.deny, err = compile(p.opts.Deny); err != nil {
		return nil, err
	}
	p.maxConns = orDefault(p.opts.MaxConns, DefaultMaxConns)
	p.perOwner = orDefault(p.opts.MaxConnsPerOwner, max(p.maxConns/4, 1))
	p.ownerUse = map[string]int{}
	p.dialTimeout = orDefault(p.opts.DialTimeout, DefaultDialTimeout)
	p.askTimeout = orDefault(p.opts.AskTimeout, DefaultAskTimeout)
	p.askQueue = orDefault(p.opts.AskQueue, DefaultAskQueue)
	p.askBurst = orDefault(p.opts.AskBurst, DefaultAskBurst)
	p.askRefill = orDefault(p.opts.AskRefill, DefaultAskRefill)
	p.clock = time.Now
	p.idle = orDefault(p.opts.IdleTimeout, DefaultIdleTimeout)
	p.header = orDefault(p.opts.HeaderTimeout, DefaultHeaderTimeout)
	p.halfIdle = halfClosedIdle
	p.bufs.New = func() any { b := make([]byte, bufSize); return &b }
	p.asked.owners = map[string]*askState{}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.front.Store(&front{ask: p.opts.Ask, refused: p.opts.Refused})
	return p, nil
}

func (p *Proxy) now() time.Time { return p.clock() }

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// ErrClosed: the proxy was closed.
var ErrClosed = errors.New("egress: proxy closed")

// Serve answers the connections l accepts, made by the commands of the
// session owner, until l is closed (then it returns nil) or the proxy is
// (ErrClosed). Serve takes l over: it is closed when Serve returns.
func (p *Proxy) Serve(l net.Listener, owner string) error {
	return p.serve(l, owner, p.serveConn)
}

// serve accepts l's connections, each within the bounds, and has handle
// serve each on a goroutine of its own (see Serve).
func (p *Proxy) serve(l net.Listener, owner string, handle func(c net.Conn, owner string)) error {
	if !p.track(l, nil) {
		return ErrClosed
	}
	defer p.untrack(l)
	defer l.Close()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return ErrClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !transient(err) {
				return fmt.Errorf("egress: accept: %w", err)
			}
			// Out of descriptors or memory, for the while: wait, as
			// net/http does, rather than end every session's proxy.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-p.ctx.Done():
			}
			continue
		}
		backoff = 0
		if limit := p.take(owner); limit > 0 {
			c.Close()
			p.refused(&Refusal{Owner: owner, Reason: Busy, Max: limit})
			continue
		}
		if !p.track(c, func() { defer p.give(owner); handle(c, owner) }) {
			p.give(owner)
			return ErrClosed
		}
	}
}

// transient reports whether an accept error passes with time (too many
// open files, no buffer space, a connection aborted before it was
// accepted).
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// take reserves a connection slot for owner, unless the owner or the
// proxy has as many connections as allowed: then it returns that limit.
func (p *Proxy) take(owner string) (limit int) {
	p.slotMu.Lock()
	defer p.slotMu.Unlock()
	switch {
	case p.ownerUse[owner] >= p.perOwner:
		return p.perOwner
	case p.inUse >= p.maxConns:
		return p.maxConns
	}
	p.inUse++
	p.ownerUse[owner]++
	return 0
}

// give returns owner's slot.
func (p *Proxy) give(owner string) {
	p.slotMu.Lock()
	defer p.slotMu.Unlock()
	p.inUse--
	if p.ownerUse[owner]--; p.ownerUse[owner] <= 0 {
		delete(p.ownerUse, owner)
	}
	if p.event != nil {
		p.event("freed")
	}
}

// track records an open connection or listener, for Close; with a
// connection (serve not nil) it starts serve on a goroutine Close waits
// for. It reports false, and closes c, once the proxy is closed.
func (p *Proxy) track(c io.Closer, serve func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.open[c] = struct{}{}
	if serve != nil {
		p.wg.Go(func() {
			defer p.untrack(c)
			defer c.Close()
			serve()
		})
	}
	return true
}

func (p *Proxy) untrack(c io.Closer) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}

// Close closes every listener and connection, and waits for their
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cancel()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// serveConn tells SOCKS5 from HTTP by the first byte and serves the
// connection, refusing it when the proxy is full.
func (p *Proxy) serveConn(c net.Conn, owner string) {
	_ = c.SetReadDeadline(time.Now().Add(p.header))
	lr := &io.LimitedReader{R: c, N: maxHeader}
	br := bufio.NewReaderSize(lr, 4<<10)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	s := &session{p: p, c: c, br: br, lr: lr, owner: owner}
	if first[0] == socksVersion {
		s.socks()
	} else {
		s.http()
	}
}

// session is one client connection being served.
type session struct {
	p     *Proxy
	c     net.Conn
	br    *bufio.Reader     // the request, read through lr
	lr    *io.LimitedReader // bounds the request; lifted for the tunnel
	owner string
	shows bool // a refusal's text reaches the command (Refusal.Shown)
}

// connect checks the destination and connects to it, or returns why not
// (told to Options.Refused).
func (s *session) connect(host string, port int) (net.Conn, *Refusal) {
	p := s.p
	if port <= 0 || port > 65535 {
		return nil, s.refused(&Refusal{Owner: s.owner, Host: normalize(host), Port: port, Reason: Malformed, Cause: BadDestination, Err: fmt.Errorf("port %d", port)})
	}
	// The questions in line before this one's, its own, a lookup and a
	// connection.
	ctx, cancel := context.WithTimeout(p.ctx, time.Duration(p.askQueue+1)*p.askTimeout+2*p.dialTimeout)
	defer cancel()
	checked := &Refusal{Owner: s.owner, Host: host, Port: port}
	addrs, ref := p.checkRef(ctx, checked)
	if ref != nil {
		return nil, s.refused(ref)
	}
	// Allowed: whatever happens now is no decision of the allowlist's.
	p.observe(checked, "allow")
	var errs []error
	for _, a := range addrs {
		up, err := p.dial(ctx, netip.AddrPortFrom(a, uint16(port)))
		if err == nil && !p.track(up, nil) {
			return nil, s.refused(&Refusal{Owner: s.owner, Host: normalize(host), Port: port, Reason: Unreachable, Cause: ConnectFailed, Err: ErrClosed, told: true})
		}
		if err == nil {
			return &trackedConn{Conn: up, p: p}, nil
		}
		errs = append(errs, err)
	}
	return nil, s.refused(&Refusal{Owner: s.owner, Host: normalize(host), Port: port, Reason: Unreachable, Cause: dialCause(errs), Err: errors.Join(errs...), told: true})
}

// refused marks r as shown to the command where it is, and tells
// Options.Refused.
func (s *session) refused(r *Refusal) *Refusal {
	r.Shown = s.shows
	return s.p.refused(r)
}

func (p *Proxy) dial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	if p.opts.Dial != nil {
		return p.opts.Dial(ctx, "tcp", ap.String())
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", ap.String())
}

// trackedConn is an upstream connection, which Close closes too.
type trackedConn struct {
	net.Conn
	p *Proxy
}

func (c *trackedConn) Close() error {
	c.p.untrack(c.Conn)
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// front is the front end's part in the proxy: who asks the user about a
// destination no rule names, and who is told of each refusal
// (Options.Ask and Refused, or what SetFront set since).
type front struct {
	ask     func(ctx context.Context, q Question) (Decision, error)
	refused func(r *Refusal)
}

// SetFront makes ask and refused the proxy's Options.Ask and
// Options.Refused from now on, for a front end made after the proxy (the
// sandbox that serves it is made first); nil for either is none. A
// question already put to the user is not taken back.
func (p *Proxy) SetFront(ask func(ctx context.Context, q Question) (Decision, error), refused func(r *Refusal)) {
	p.front.Store(&front{ask: ask, refused: refused})
}

// refused tells the front end's refused hook, and Options.Observe of
// the refusal (unless the connection was allowed already), and returns r.
func (p *Proxy) refused(r *Refusal) *Refusal {
	if !r.told {
		p.observe(r, "deny")
	}
	if f := p.front.Load().refused; f != nil {
		f(r)
	}
	return r
}

// RefusalText is what a refused client reads (Options.RefusalText, by
// default the refusal's Error), for a front end that tells the model too.
func (p *Proxy) RefusalText(r *Refusal) string {
	if p.opts.RefusalText != nil {
		return p.opts.RefusalText(r)
	}
	return r.Error()
}

// hostPort splits "host:port".
func hostPort(s string) (string, int, error) {
	h, ps, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", ps, err)
	}
	return h, port, nil
}
