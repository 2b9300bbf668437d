package mcpserver

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errSessionEnded is the cause of a call aborted because its session ended.
var errSessionEnded = errors.New("the session ended")

// callAborts can abort the requests in flight of a session: closing an SDK
// session waits for them, and does not cancel them. It is a receiving
// middleware that gives each request a context it can cancel.
type callAborts struct {
	mu      sync.Mutex
	calls   map[*mcp.ServerSession]map[*abortable]struct{}
	aborted map[*mcp.ServerSession]bool // until forget
}

type abortable struct{ cancel context.CancelCauseFunc }

func newCallAborts() *callAborts {
	return &callAborts{calls: map[*mcp.ServerSession]map[*abortable]struct{}{}, aborted: map[*mcp.ServerSession]bool{}}
}

func (a *callAborts) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		c := &abortable{cancel: cancel}
		a.add(ss, c)
		defer a.remove(ss, c)
		return next(ctx, method, req)
	}
}

// add registers c, cancelling it at once if its session was aborted.
func (a *callAborts) add(ss *mcp.ServerSession, c *abortable) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.aborted[ss] {
		c.cancel(errSessionEnded)
		return
	}
	m := a.calls[ss]
	if m == nil {
		m = map[*abortable]struct{}{}
		a.calls[ss] = m
	}
	m[c] = struct{}{}
}

func (a *callAborts) remove(ss *mcp.ServerSession, c *abortable) {
	c.cancel(nil)
	a.mu.Lock()
	defer a.mu.Unlock()
	if m := a.calls[ss]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(a.calls, ss)
		}
	}
}

// abort cancels every request in flight of ss, and those it gets from now
// until forget.
func (a *callAborts) abort(ss *mcp.ServerSession) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.aborted[ss] = true
	for c := range a.calls[ss] {
		c.cancel(errSessionEnded)
	}
}

// forget drops what is kept of an ended session.
func (a *callAborts) forget(ss *mcp.ServerSession) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.aborted, ss)
	delete(a.calls, ss)
}
