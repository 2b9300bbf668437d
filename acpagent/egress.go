package acpagent

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/toolbash"
)

// AskEgress asks the editor's user, by session/request_permission on a
// card of its own, whether the commands of the session whose owner token
// q names may connect to a host the sandbox's network allowlist does not
// list: once, for the rest of the session, or not, or no new host at all
// (egress.DenyAllNew). It is the asker of
// Options.Egress; Yolo does not answer it (the allowlist is the sandbox's,
// not a command's permission). A session that is gone cannot be asked
// (toolbash.ErrCannotAsk).
func (a *Agent) AskEgress(ctx context.Context, q egress.Question) (egress.Decision, error) {
	s := a.session(acp.SessionId(q.Owner))
	if s == nil {
		return egress.Deny, toolbash.ErrCannotAsk
	}
	dest := toolbash.Visible(net.JoinHostPort(q.Host, strconv.Itoa(q.Port)))
	id := acp.ToolCallId(fmt.Sprintf("dsh-network-%d", a.netCards.Add(1)))
	title := "Network: connect to " + dest
	kind := acp.ToolKindFetch
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: s.id, Update: acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{
		SessionUpdate: "tool_call", ToolCallId: id, Title: title, Kind: kind, Status: acp.ToolCallStatusPending,
		RawInput: map[string]any{"host": q.Host, "port": q.Port}}}})
	text := fmt.Sprintf("A command in the sandbox wants to connect to %s, which is not on the network allowlist.", dest)
	chosen, err := a.askPermission(ctx, s.id, permissionCard(id, title, kind, nil, text),
		acp.PermissionOption{OptionId: allowOnce, Name: "Allow this connection", Kind: acp.PermissionOptionKindAllowOnce},
		acp.PermissionOption{OptionId: allowAlways, Name: "Allow " + toolbash.Visible(q.Host) + " for this session", Kind: acp.PermissionOptionKindAllowAlways},
		acp.PermissionOption{OptionId: rejectOnce, Name: "Deny", Kind: acp.PermissionOptionKindRejectOnce},
		acp.PermissionOption{OptionId: rejectAllNew, Name: "Deny every new host for this session", Kind: acp.PermissionOptionKindRejectAlways})
	d := egress.Deny // also where nobody answered (a cancelled turn): nothing to remember
	switch {
	case err != nil:
	case chosen == allowOnce:
		d = egress.AllowOnce
	case chosen == allowAlways:
		d = egress.AllowSession
	case chosen == rejectAllNew:
		d = egress.DenyAllNew
	}
	status := acp.ToolCallStatusCompleted
	if d == egress.Deny {
		status = acp.ToolCallStatusFailed
	}
	_ = a.conn.SessionUpdate(context.WithoutCancel(ctx), acp.SessionNotification{SessionId: s.id, Update: acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
		SessionUpdate: "tool_call_update", ToolCallId: id, Status: &status}}})
	if err != nil {
		return egress.Deny, err
	}
	return d, nil
}

// egressRefused tells the model of the session the refusal names, in its
// next request, why the sandbox's network proxy refused a connection, in
// the words the command read (Options.Egress's refusal hook).
func (a *Agent) egressRefused(r *egress.Refusal) {
	a.tb.EgressRefused(r, a.opts.Egress.RefusalText(r))
}
