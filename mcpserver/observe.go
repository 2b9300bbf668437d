package mcpserver

import (
	"context"
	"time"

	"github.com/dshgo/dsh/observe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the server tells its operators (Options.Observe): each session's
// start, with what its client said it is, and its end, with why; and each
// tool call, as an *observe.Call that travels in the call's context for
// the gate and the tools to fill, emitted once the call has its result. A
// round of a call that only asks the client something (its roots, the
// user's answer) is no call yet: the call is emitted when the client
// calls again with the answers. Sessions are named by observe.SessionName,
// never by their owner token.

// The reasons a session ends, as SessionEnd says them.
const (
	endClosed   = "closed"
	endIdle     = "idle"
	endShutdown = "shutdown"
)

// front is the session's front end, as events name it: a streamable HTTP
// session has an id, a stdio one has none.
func (st *sessionState) front() string {
	if st.ss.ID() != "" {
		return "mcp-http"
	}
	return "mcp-stdio"
}

// methodDiscover is a client's question of what the server offers (protocol
// 2026-07-28), in a session of its own that ends with the answer: no
// client session starts with it.
const methodDiscover = "server/discover"

// announce emits the session's start, once, before the first request
// of it that the server handles (an initialize, or on protocol 2026-07-28
// any request, which says who the client is in its _meta), but a
// server/discover.
func (st *sessionState) announce(req mcp.Request) {
	if st.s.observe == nil {
		return
	}
	st.mu.Lock()
	if !st.started.IsZero() || st.ended {
		st.mu.Unlock()
		return
	}
	st.started = time.Now()
	st.mu.Unlock()
	e := &observe.SessionStart{Time: st.started, Session: st.name, Front: st.front(), Containment: st.s.containment}
	if info := clientInfo(req); info != nil {
		e.Client, e.ClientVersion = info.Name, info.Version
	}
	st.s.observe(e)
}

// clientInfo is what the client of req said it is, nil if it did not.
func clientInfo(req mcp.Request) *mcp.Implementation {
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
		return p.ClientInfo
	}
	if r, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok {
		return r.ClientInfo()
	}
	return nil
}

// endReason says why the session ends, unless something said it first.
func (s *Server) endReason(ss *mcp.ServerSession, reason string) {
	s.mu.Lock()
	st := s.sessions[ss]
	s.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		if st.reason == "" {
			st.reason = reason
		}
		st.mu.Unlock()
	}
}

// announceEnd emits the end of a session whose start was emitted, once.
// A session no one said why ended was closed by its client; on streamable
// HTTP, where a client's DELETE, the grace and shutdown say so, the SDK's
// idle timeout ended it.
func (st *sessionState) announceEnd() {
	st.mu.Lock()
	started, reason, ended := st.started, st.reason, st.ended
	st.ended = true
	st.mu.Unlock()
	if st.s.observe == nil || started.IsZero() || ended {
		return
	}
	if reason == "" {
		reason = endClosed
		if st.front() == "mcp-http" {
			reason = endIdle
		}
	}
	now := time.Now()
	st.s.observe(&observe.SessionEnd{Time: now, Session: st.name, Front: st.front(), Reason: reason, Duration: now.Sub(started)})
}

// observeCall is the event of a tool call of the session, nil when nobody
// observes.
func (st *sessionState) observeCall(tool string) *observe.Call {
	if st.s.observe == nil {
		return nil
	}
	return &observe.Call{Time: time.Now(), Session: st.name, Tool: tool}
}

// finishCall completes a call's event with its result and emits it: an
// outcome no layer set is "ok", or for an error result "aborted" (the
// call's context ended) or "error", with the result's first line.
func (s *Server) finishCall(ctx context.Context, c *observe.Call, out *mcp.CallToolResult) {
	if c == nil {
		return
	}
	c.Duration = time.Since(c.Time)
	if out.IsError {
		outcome := observe.OutcomeError
		if ctx.Err() != nil {
			outcome = observe.OutcomeAborted
		}
		c.Fail(outcome, firstText(out))
	}
	if c.Outcome == "" {
		c.Outcome = observe.OutcomeOK
	}
	s.observe(c)
}

// firstText is the text of a result's first block.
func firstText(out *mcp.CallToolResult) string {
	if len(out.Content) > 0 {
		if t, ok := out.Content[0].(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}
