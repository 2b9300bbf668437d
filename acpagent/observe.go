package acpagent

import (
	"context"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/tools"
)

// What the agent tells its operators (Options.Observe): each session's
// start (what the editor said it is, the session's directories) and end,
// and each tool call, as an *observe.Call that travels in the call's
// context for the permission gate and the tools to fill, emitted once
// the call has its result. Sessions are named by observe.SessionName,
// never by their owner token.

// The reasons a session ends, as SessionEnd says them.
const (
	endClosed   = "closed"
	endShutdown = "shutdown"
)

// announce tells of a new session.
func (a *Agent) announce(s *agentSession, client acp.Implementation, more []string) {
	if a.opts.Observe == nil {
		return
	}
	s.name, s.started = observe.SessionName(s.owner), time.Now()
	a.opts.Observe(&observe.SessionStart{Time: s.started, Session: s.name, Front: "acp",
		Client: client.Name, ClientVersion: client.Version, Roots: append([]string{s.cwd}, more...),
		Containment: a.opts.Containment})
}

// announceEnd tells of a session's end.
func (a *Agent) announceEnd(s *agentSession, reason string) {
	if a.opts.Observe == nil {
		return
	}
	now := time.Now()
	a.opts.Observe(&observe.SessionEnd{Time: now, Session: s.name, Front: "acp", Reason: reason, Duration: now.Sub(s.started)})
}

// runToolCall runs a tool call through the bridge, and tells of it.
func (a *Agent) runToolCall(ctx context.Context, bridge *Bridge, s *agentSession, call *tools.Call) *tools.Result {
	if a.opts.Observe == nil {
		return bridge.RunToolCall(ctx, s.id, s.cwd, call)
	}
	c := &observe.Call{Time: time.Now(), Session: s.name, Tool: call.Tool}
	res := bridge.RunToolCall(observe.WithCall(ctx, c), s.id, s.cwd, call)
	c.Duration = time.Since(c.Time)
	if res.IsError {
		outcome := observe.OutcomeError
		if ctx.Err() != nil {
			outcome = observe.OutcomeAborted
		}
		c.Fail(outcome, res.Text())
	}
	if c.Outcome == "" {
		c.Outcome = observe.OutcomeOK
	}
	a.opts.Observe(c)
	return res
}

// notePermission notes, where no rules decide and the agent asks about
// every call, that it asked, and the answer.
func notePermission(ctx context.Context, answer string) {
	if c := observe.CallFrom(ctx); c != nil {
		c.Permission = &observe.Permission{Verdict: "ask", Reason: "no permission rules: every call is asked about", Answer: answer}
	}
}

// denied is the error result of a call the user did not let run.
func denied(ctx context.Context, text string) *tools.Result {
	observe.CallFrom(ctx).Fail(observe.OutcomeDenied, text)
	return tools.ErrorResult(text)
}
