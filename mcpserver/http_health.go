package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// The probes of the HTTP handler, answered without the token: load
// balancers and orchestrators call them, and they tell nothing but a
// fixed word.
const (
	// HealthPath answers 200 while the process serves HTTP at all.
	HealthPath = "/healthz"
	// ReadyPath answers 200 when the handler takes new sessions: not
	// draining or closed, and HTTPOptions.Ready says yes.
	ReadyPath = "/readyz"
)

// The bodies of the probes' answers.
const (
	healthyBody  = "ok\n"
	readyBody    = "ready\n"
	notReadyBody = "not ready\n"
	drainingBody = "draining\n"
)

// probe answers a request for HealthPath or ReadyPath and reports true;
// any other path is left to the MCP handler (false).
func (h *HTTPHandler) probe(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != HealthPath && r.URL.Path != ReadyPath {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "method not allowed\n")
		return true
	}
	switch {
	case r.URL.Path == HealthPath:
		plain(w, http.StatusOK, healthyBody)
	case h.sessions.isDraining():
		plain(w, http.StatusServiceUnavailable, drainingBody)
	case h.ready.check(r.Context()) != nil:
		plain(w, http.StatusServiceUnavailable, notReadyBody)
	default:
		plain(w, http.StatusOK, readyBody)
	}
	return true
}

// plain writes a short text answer that no cache keeps.
func plain(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// readiness calls HTTPOptions.Ready for the ready probe: one call at a
// time, whose answer serves every probe that comes while it runs and for
// the reuse period after it, so that probes (which need no token) cannot
// make the server run its check more often than that.
type readiness struct {
	ready  func(context.Context) error // nil: always ready
	reuse  time.Duration
	logger *slog.Logger

	ctx    context.Context // of the calls; ended by close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	last    *readyCall // the latest call, running or done
	lastErr string     // what the latest failure said, to log changes only
	closed  bool
	waiting int // probes waiting for an answer (for tests)
}

// readyCall is one call of Ready.
type readyCall struct {
	done  chan struct{} // closed when err and ended are set
	err   error
	ended time.Time
}

// errClosed answers the ready probe of a closed handler.
var errClosed = errors.New("the handler is closed")

func newReadiness(ready func(context.Context) error, reuse time.Duration, logger *slog.Logger) *readiness {
	ctx, cancel := context.WithCancel(context.Background())
	return &readiness{ready: ready, reuse: reuse, logger: logger, ctx: ctx, cancel: cancel}
}

// check is Ready's latest answer, calling it when none is fresh; it
// returns ctx's error if ctx ends first.
func (rd *readiness) check(ctx context.Context) error {
	if rd.ready == nil {
		return nil
	}
	rd.mu.Lock()
	if rd.closed {
		rd.mu.Unlock()
		return errClosed
	}
	c := rd.last
	if c == nil || (c.isDone() && time.Since(c.ended) >= rd.reuse) {
		c = &readyCall{done: make(chan struct{})}
		rd.last = c
		rd.wg.Add(1)
		go rd.call(c)
	}
	rd.waiting++
	rd.mu.Unlock()
	defer func() {
		rd.mu.Lock()
		rd.waiting--
		rd.mu.Unlock()
	}()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waiters is how many probes wait for an answer of Ready.
func (rd *readiness) waiters() int {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.waiting
}

func (c *readyCall) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// call runs Ready for c and logs a failure that differs from the last.
func (rd *readiness) call(c *readyCall) {
	defer rd.wg.Done()
	err := rd.ready(rd.ctx)
	rd.mu.Lock()
	c.err, c.ended = err, time.Now()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	changed := msg != rd.lastErr
	rd.lastErr = msg
	rd.mu.Unlock()
	close(c.done)
	if changed && err != nil && rd.ctx.Err() == nil {
		rd.logger.Warn("not ready: " + msg)
	}
}

// close ends a call in progress and waits for it; probes get errClosed.
func (rd *readiness) close() {
	rd.mu.Lock()
	rd.closed = true
	rd.mu.Unlock()
	rd.cancel()
	rd.wg.Wait()
}
