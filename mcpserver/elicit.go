package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshgo/dsh/toolbash"
)

// The choices of a permission elicitation.
const (
	choiceOnce   = "allow once"
	choiceAlways = "always allow in this session"
	choiceReject = "reject"
)

// permissionInput names the permission question among a call's input
// requests (multi round-trip requests, SEP-2322).
const permissionInput = "dsh-permission"

// callState carries a tool call's MCP request to the asker, and the
// question it could not ask within the call.
type callState struct {
	req       *mcp.CallToolRequest
	needInput *mcp.ElicitParams
}

type callStateKey struct{}

// elicit asks the session's user about a command by elicitation (form
// mode), where the client declared it can: on the current protocol, as an
// input request the client answers by calling again; on older ones, by an
// elicitation request within the call.
func (s *Server) elicit(ctx context.Context, q toolbash.Question) (toolbash.Answer, error) {
	cs, _ := ctx.Value(callStateKey{}).(*callState)
	if cs == nil || !canElicit(cs.req.Session) {
		return toolbash.Reject, toolbash.ErrCannotAsk
	}
	if res, ok := cs.req.Params.InputResponses[permissionInput].(*mcp.ElicitResult); ok {
		return answerOf(res), nil
	}
	params := elicitParams(q)
	if cs.req.ProtocolVersion() >= newProtocol {
		cs.needInput = params
		return toolbash.Reject, errInputNeeded
	}
	res, err := cs.req.Session.Elicit(ctx, params)
	if err != nil {
		return toolbash.Reject, err
	}
	return answerOf(res), nil
}

// errInputNeeded: the question goes back to the client as an input request.
var errInputNeeded = errors.New("the client answers by calling again")

// elicitParams is the form that asks about q.
func elicitParams(q toolbash.Question) *mcp.ElicitParams {
	choices := []string{choiceOnce}
	desc := "allow once, or reject"
	if len(q.Verdict.Prefixes) > 0 {
		choices = append(choices, choiceAlways)
		desc = "always allow in this session: " + strings.Join(q.Verdict.Prefixes, ", ")
	}
	choices = append(choices, choiceReject)
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: elicitMessage(q),
		RequestedSchema: &jsonschema.Schema{
			Type:     "object",
			Required: []string{"decision"},
			Properties: map[string]*jsonschema.Schema{"decision": {
				Type: "string", Title: "Run this command?", Enum: anySlice(choices), Description: desc,
			}},
		},
	}
}

// answerOf reads the user's answer.
func answerOf(res *mcp.ElicitResult) toolbash.Answer {
	if res.Action != "accept" {
		return toolbash.Reject
	}
	switch res.Content["decision"] {
	case choiceOnce:
		return toolbash.AllowOnce
	case choiceAlways:
		return toolbash.AllowPrefixes
	}
	return toolbash.Reject
}

func canElicit(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil // an empty object means form
}

func elicitMessage(q toolbash.Question) string {
	return fmt.Sprintf("The agent wants to run a command that needs your approval (%s):\n\n%s\n\nin %s", q.Verdict.Reason, q.Command, q.Workdir)
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
