package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// ServeStreamable serves s over streamable HTTP on ln (see HTTPHandler)
// until ctx is done, then shuts down at once: it stops accepting, closes
// the connections that have not sent a request, ends every session
// (aborting its calls in flight and killing its tasks), gives the
// responses still being written opts.FlushTimeout, cuts what remains and
// returns when every handler has returned. It closes ln; it does not close
// s.
//
// Once opts.Drain is closed, it drains first (see HTTPHandler.Drain): new
// sessions are refused, the open ones served, until no call is in flight
// or opts.DrainTimeout has passed; then it shuts down as above. ctx ending
// during the drain cuts it short.
func (s *Server) ServeStreamable(ctx context.Context, ln net.Listener, opts *HTTPOptions) error {
	o := opts.withDefaults()
	h := s.HTTPHandler(&o)
	conns := &connTracker{conns: map[net.Conn]http.ConnState{}}
	handlers := newCounter()
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handlers.add(1)
			defer handlers.add(-1)
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		ConnState:         conns.track,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-served:
		hs.Close()
		h.Close()
	case <-ctx.Done():
		err = shutdown(hs, h, conns, o.FlushTimeout, served)
	case <-o.Drain:
		h.sessions.startDrain()
		if o.OnDrain != nil {
			o.OnDrain()
		}
		s.drain(ctx, h, o.DrainTimeout)
		err = shutdown(hs, h, conns, o.FlushTimeout, served)
	}
	handlers.waitZero()
	return err
}

// drain drains h for at most timeout (none if negative) or until ctx is
// done, and warns of the calls it gives up on.
func (s *Server) drain(ctx context.Context, h *HTTPHandler, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, max(timeout, 0))
	defer cancel()
	if h.Drain(ctx) != nil {
		if n := h.CallsInFlight(); n > 0 {
			s.logger.Warn(fmt.Sprintf("the drain ended with %d requests still waiting for calls: their calls are aborted", n))
		}
	}
}

// shutdown stops hs at once (see ServeStreamable) and returns what its
// Serve, which reports on served, returned.
func shutdown(hs *http.Server, h *HTTPHandler, conns *connTracker, flush time.Duration, served <-chan error) error {
	stop(hs, h, conns, flush)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func stop(hs *http.Server, h *HTTPHandler, conns *connTracker, flush time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- hs.Shutdown(ctx) }() // closes the listener first
	// http.Server.Shutdown would wait up to 5 s for a connection that has
	// sent no request yet: close those now, and any accepted from now on.
	conns.closeNew()
	// Past the flush timeout, connections are cut, even while the sessions are
	// still ending: a client stalled in the middle of a request must not
	// hold the end up.
	timer := time.AfterFunc(flush, func() { cancel(); hs.Close() })
	defer timer.Stop()
	h.Close() // ends the sessions, so their streams end
	if err := <-done; err != nil {
		hs.Close()
	}
}

// connTracker follows the state of an http.Server's connections, to close
// those that have not sent a request when the server shuts down.
type connTracker struct {
	mu      sync.Mutex
	conns   map[net.Conn]http.ConnState
	closing bool
}

// track is the http.Server's ConnState hook.
func (ct *connTracker) track(c net.Conn, state http.ConnState) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	switch {
	case state == http.StateClosed || state == http.StateHijacked:
		delete(ct.conns, c)
	case state == http.StateNew && ct.closing:
		c.Close()
	default:
		ct.conns[c] = state
	}
}

// closeNew closes the connections that have not sent a request, now and
// from now on.
func (ct *connTracker) closeNew() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.closing = true
	for c, state := range ct.conns {
		if state == http.StateNew {
			c.Close()
		}
	}
}

// counter counts handlers running; unlike a sync.WaitGroup it may go up
// from zero while someone waits.
type counter struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond
}

func newCounter() *counter {
	c := &counter{}
	c.zero = sync.NewCond(&c.mu)
	return c
}

func (c *counter) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += d
	if c.n == 0 {
		c.zero.Broadcast()
	}
}

func (c *counter) waitZero() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n > 0 {
		c.zero.Wait()
	}
}
