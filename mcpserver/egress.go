package mcpserver

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/toolbash"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The answers of a network question.
const (
	netOnce    = "Allow this connection"
	netSession = "Allow this host for the session"
	netDeny    = "Deny"
	netDenyAll = "Deny every new host for the session"
)

// AskEgress asks the user of the session whose owner token q names, by
// elicitation, whether its commands may connect to a host the sandbox's
// network allowlist does not list: once, for the rest of the session, or
// not, or no new host at all (egress.DenyAllNew). It is the asker of
// Options.Egress, which puts one question at a time to a session. A
// session that is gone, a client without elicitation, and one on the
// 2026-07-28 protocol (where a server asks only within a call's answer,
// and a connection may come from a background task) cannot be asked:
// toolbash.ErrCannotAsk. A dismissed question (cancel) is no answer:
// toolbash.ErrNoAnswer, which the proxy does not remember.
func (s *Server) AskEgress(ctx context.Context, q egress.Question) (egress.Decision, error) {
	s.mu.Lock()
	st := s.owners[q.Owner]
	s.mu.Unlock()
	if st == nil {
		return egress.Deny, toolbash.ErrCannotAsk
	}
	if p := st.ss.InitializeParams(); p == nil || p.ProtocolVersion >= newProtocol || !canElicit(p.Capabilities) {
		return egress.Deny, toolbash.ErrCannotAsk
	}
	dest := toolbash.Visible(net.JoinHostPort(q.Host, strconv.Itoa(q.Port)))
	form := &mcp.ElicitParams{
		Mode:            "form",
		Message:         fmt.Sprintf("A command in the sandbox wants to connect to %s, which is not on the network allowlist.", dest),
		RequestedSchema: decisionForm("Connect to "+dest+"?", "", []string{netOnce, netSession, netDeny, netDenyAll}),
	}
	res, err := st.ss.Elicit(ctx, form)
	if err != nil {
		return egress.Deny, err
	}
	return netAnswer(form, res)
}

// netAnswer reads the answer to a network question (see chosen): a
// decline and the choice Deny are the user's no.
func netAnswer(form *mcp.ElicitParams, res *mcp.ElicitResult) (egress.Decision, error) {
	d, err := chosen(form, res)
	switch d {
	case netOnce:
		return egress.AllowOnce, err
	case netSession:
		return egress.AllowSession, err
	case netDenyAll:
		return egress.DenyAllNew, err
	}
	return egress.Deny, err
}

// egressRefused tells the model of the session the refusal names, beside
// its next tool result, why the sandbox's network proxy refused a
// connection, in the words the command read (Options.Egress's refusal
// hook).
func (s *Server) egressRefused(r *egress.Refusal) {
	s.tb.EgressRefused(r, s.egress.RefusalText(r))
}
