package mcpserver

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// ErrDraining is wrapped by the refusal of a new session while the
// handler drains, or once it is closed.
var ErrDraining = errors.New("this server is shutting down and takes no new sessions: try again, and another server (or this one, restarted) will take it")

// drainState is the drain of an httpSessions, kept under its mu.
type drainState struct {
	on    bool
	calls int           // POSTs that carry calls (initialize too), in flight
	quiet chan struct{} // closed (and dropped) when calls and pending are 0
}

// Drain makes h drain: from now on a request that would make a new
// session gets 503, with Retry-After (HTTPOptions.RetryAfter) and a
// JSON-RPC error wrapping ErrDraining, ReadyPath answers 503, and the open
// sessions are served as before, new calls included. Drain returns nil
// once no call is in flight (no request of a session waits for its
// answer and no session is being made), or ctx's error if ctx ends
// first. It ends no session: Close does, after it. Calling it again
// waits again.
func (h *HTTPHandler) Drain(ctx context.Context) error {
	return h.sessions.drainWait(ctx)
}

// Draining reports whether h drains or is closed.
func (h *HTTPHandler) Draining() bool { return h.sessions.isDraining() }

// CallsInFlight reports how many requests wait for the answers to their
// calls (those that make a session included).
func (h *HTTPHandler) CallsInFlight() int {
	hs := h.sessions
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.drain.calls
}

func (hs *httpSessions) drainWait(ctx context.Context) error {
	hs.mu.Lock()
	hs.drain.on = true
	if hs.drain.calls == 0 && hs.pending == 0 {
		hs.mu.Unlock()
		return nil
	}
	if hs.drain.quiet == nil {
		hs.drain.quiet = make(chan struct{})
	}
	quiet := hs.drain.quiet
	hs.mu.Unlock()
	select {
	case <-quiet:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startDrain makes hs drain, without waiting for the calls in flight.
func (hs *httpSessions) startDrain() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.drain.on = true
}

func (hs *httpSessions) isDraining() bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.drain.on || hs.closed
}

// callsStart counts a request with calls in flight; callsEnd its end.
func (hs *httpSessions) callsStart() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.drain.calls++
}

func (hs *httpSessions) callsEnd() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.drain.calls--
	hs.quietLocked()
}

// quietLocked wakes the drain waiting for no call in flight, if none is.
func (hs *httpSessions) quietLocked() {
	if hs.drain.quiet != nil && hs.drain.calls == 0 && hs.pending == 0 {
		close(hs.drain.quiet)
		hs.drain.quiet = nil
	}
}

// retryAfter is d as a Retry-After header's value: whole seconds, rounded
// up.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64(max(0, (d+time.Second-1)/time.Second)), 10)
}
