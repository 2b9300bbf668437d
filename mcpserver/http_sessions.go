package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionIDHeader names the session of a streamable HTTP request.
const sessionIDHeader = "Mcp-Session-Id"

// httpSessions follows the sessions of one HTTPHandler: it counts each
// session's HTTP requests in flight (a POST until its response or stream
// ends, a GET stream while it is open), ends a session that has had none
// for the grace period, caps how many are open, and ends them all on close.
//
// The SDK's own SessionTimeout only pauses during POSTs, so a client that
// listens on a GET stream would be timed out, and one that closed its
// connection without a DELETE (Claude Code does) is only noticed here.
type httpSessions struct {
	s     *Server
	grace time.Duration // <= 0: never end a session for want of requests
	max   int           // <= 0: no cap
	retry time.Duration // Retry-After of a session refused while draining

	mu      sync.Mutex
	idle    *sync.Cond // signalled when pending drops
	byID    map[string]*tracked
	pending int // new-session POSTs in flight
	closed  bool
	drain   drainState     // see http_drain.go
	wg      sync.WaitGroup // watchers and session enders

	onIdle func(id string) // tests: a session's last request in flight ended
}

// tracked is one session of the handler.
type tracked struct {
	id       string
	ss       *mcp.ServerSession
	inflight int
	gen      int // changes with inflight, so a stale grace timer does nothing
	timer    *time.Timer
	ending   bool
}

func newHTTPSessions(s *Server, grace time.Duration, max int, retry time.Duration) *httpSessions {
	hs := &httpSessions{s: s, grace: grace, max: max, retry: retry, byID: map[string]*tracked{}}
	hs.idle = sync.NewCond(&hs.mu)
	return hs
}

// serve passes r on to the SDK's handler, counting it against its session.
func (hs *httpSessions) serve(w http.ResponseWriter, r *http.Request, sdk http.Handler) {
	id := r.Header.Get(sessionIDHeader)
	if id == "" {
		if r.Method == http.MethodPost {
			hs.serveNew(w, r, sdk)
		} else {
			sdk.ServeHTTP(w, r) // the SDK refuses it
		}
		return
	}
	t := hs.acquire(id, false)
	if t == nil {
		sdk.ServeHTTP(w, r) // an unknown session: the SDK answers 404
		return
	}
	defer hs.release(t)
	if !hs.markEnding(t, r.Method == http.MethodDelete) {
		// The session is ending: it is gone for its client, and a call
		// would be aborted, or run in a session without its tasks.
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodDelete {
		// The SDK's DELETE closes the session, but closing waits for the
		// calls in flight: abort them (and kill the tasks) first.
		hs.s.endReason(t.ss, endClosed)
		hs.stop(t.ss)
	}
	var calls []json.RawMessage
	if r.Method == http.MethodPost {
		calls = readCalls(w, r)
	}
	if len(calls) > 0 {
		hs.callsStart() // a drain waits for them
		defer hs.callsEnd()
	}
	sdk.ServeHTTP(w, r)
	if len(calls) > 0 && r.Context().Err() != nil {
		cancelCalls(sdk, r, calls) // the client hung up before the answers
	}
}

// serveNew serves a POST without a session id, which makes a session
// (initialize), unless the cap is reached. The request counts against the
// cap until its response starts; then it counts as its new session, if it
// made one, so that a client's next request never sees it twice.
func (hs *httpSessions) serveNew(w http.ResponseWriter, r *http.Request, sdk http.Handler) {
	if err := hs.reserve(); err != nil {
		if errors.Is(err, ErrDraining) {
			w.Header().Set("Retry-After", retryAfter(hs.retry))
		}
		refuse(w, r, err)
		return
	}
	hs.callsStart() // a drain waits for its answer too
	defer hs.callsEnd()
	var t *tracked
	hw := &headerHook{ResponseWriter: w}
	hw.hook = func() { t = hs.adopt(w.Header().Get(sessionIDHeader)) }
	sdk.ServeHTTP(hw, r)
	hw.fire()
	if t != nil {
		hs.release(t) // starts its grace if the client never comes back
	}
}

// adopt turns a reservation into the session with the given id ("" for
// none), counting the request that made it in flight.
func (hs *httpSessions) adopt(id string) *tracked {
	var t *tracked
	if id != "" {
		t = hs.acquire(id, true)
	}
	hs.unreserve()
	return t
}

// headerHook calls hook once, just before the response starts (or when
// fire is called).
type headerHook struct {
	http.ResponseWriter
	once sync.Once
	hook func()
}

func (w *headerHook) fire() { w.once.Do(w.hook) }

func (w *headerHook) WriteHeader(code int) {
	w.fire()
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerHook) Write(b []byte) (int, error) {
	w.fire()
	return w.ResponseWriter.Write(b)
}

// FlushError flushes for http.ResponseController.
func (w *headerHook) FlushError() error {
	w.fire()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the other features.
func (w *headerHook) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errTooManySessions is wrapped by the refusal of a session past the cap.
var errTooManySessions = errors.New("too many open sessions")

func (hs *httpSessions) reserve() error {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.closed || hs.drain.on {
		return fmt.Errorf("dsh-bash: %w", ErrDraining)
	}
	if hs.max > 0 && hs.openLocked()+hs.pending >= hs.max {
		return fmt.Errorf("dsh-bash: %w: this server already has %d open sessions, its limit; end one (HTTP DELETE, or close its client), or raise the limit (dsh-bash mcp --max-sessions N)", errTooManySessions, hs.max)
	}
	hs.pending++
	return nil
}

func (hs *httpSessions) unreserve() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.pending--
	hs.idle.Broadcast()
	hs.quietLocked()
}

// codeServerBusy is the JSON-RPC error code of a refused new session (the
// implementation-defined server error range).
const codeServerBusy = -32000

// refuse answers a new-session request with 503 and a JSON-RPC error whose
// id is the request's, when its body (read up to 64 KiB) says.
func refuse(w http.ResponseWriter, r *http.Request, err error) {
	var id jsonrpc.ID
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if msg, derr := jsonrpc.DecodeMessage(body); derr == nil {
		if req, ok := msg.(*jsonrpc.Request); ok {
			id = req.ID
		}
	}
	data, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeServerBusy, Message: err.Error()}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(data)
}

// acquire counts a request in flight for session id and stops its grace
// timer. It returns nil for a session the SDK does not know, and, once the
// handler is closed, for one it does not track yet unless adopt is set (the
// session of a new-session POST, which close waits for).
func (hs *httpSessions) acquire(id string, adopt bool) *tracked {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	t := hs.byID[id]
	if t == nil {
		if hs.closed && !adopt {
			return nil
		}
		ss := hs.find(id)
		if ss == nil {
			return nil
		}
		t = &tracked{id: id, ss: ss}
		hs.byID[id] = t
		hs.wg.Add(1)
		go hs.watch(t)
		if hs.closed {
			hs.s.endReason(t.ss, endShutdown)
			hs.endLocked(t)
		}
	}
	t.inflight++
	t.gen++
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	return t
}

// find is the SDK session with the given id, nil if none.
func (hs *httpSessions) find(id string) *mcp.ServerSession {
	for ss := range hs.s.mcp.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// release ends a request of t; the last one starts the grace period.
func (hs *httpSessions) release(t *tracked) {
	hs.mu.Lock()
	t.inflight--
	t.gen++
	idle := t.inflight == 0
	if idle && !t.ending && hs.grace > 0 && hs.byID[t.id] == t {
		gen := t.gen
		t.timer = time.AfterFunc(hs.grace, func() { hs.expire(t, gen) })
	}
	onIdle := hs.onIdle
	hs.mu.Unlock()
	if idle && onIdle != nil {
		onIdle(t.id)
	}
}

// expire ends t if no request came since its timer was set.
func (hs *httpSessions) expire(t *tracked, gen int) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if t.gen != gen || t.ending || hs.closed {
		return
	}
	hs.s.endReason(t.ss, endIdle)
	hs.endLocked(t)
}

// endLocked ends t in the background: its calls are aborted, its tasks
// killed, and its SDK session closed.
func (hs *httpSessions) endLocked(t *tracked) {
	t.ending = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	hs.wg.Add(1)
	go func() {
		defer hs.wg.Done()
		hs.stop(t.ss)
		t.ss.Close()
	}()
}

// markEnding reports whether t was not ending yet, and marks it ending if
// end is set.
func (hs *httpSessions) markEnding(t *tracked, end bool) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	was := t.ending
	t.ending = t.ending || end
	return !was
}

// stop aborts the calls in flight of ss and kills its tasks at once, the
// server's own end of the session, and returns when they are gone. Closing
// ss is left to the caller: the SDK's Close waits for the calls in flight,
// and does not abort them.
func (hs *httpSessions) stop(ss *mcp.ServerSession) {
	hs.s.stopSession(ss)
}

// watch forgets t when its session ends, however it ends.
func (hs *httpSessions) watch(t *tracked) {
	defer hs.wg.Done()
	_ = t.ss.Wait()
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.byID[t.id] == t {
		delete(hs.byID, t.id)
	}
	t.ending = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// close ends every session at once and refuses new ones; it returns when
// they have all ended.
func (hs *httpSessions) close() {
	hs.mu.Lock()
	hs.closed = true
	for _, t := range hs.byID {
		if !t.ending {
			hs.s.endReason(t.ss, endShutdown)
			hs.endLocked(t)
		}
	}
	for hs.pending > 0 {
		hs.idle.Wait() // a session being made now is ended as it is adopted
	}
	hs.mu.Unlock()
	hs.wg.Wait()
}

// count is the number of open sessions.
func (hs *httpSessions) count() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.openLocked()
}

// openLocked counts the sessions that are not ending.
func (hs *httpSessions) openLocked() int {
	n := 0
	for _, t := range hs.byID {
		if !t.ending {
			n++
		}
	}
	return n
}
