package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
)

// The choices of a permission elicitation.
const (
	choiceOnce   = "allow once"
	choiceAlways = "always allow in this session"
	choiceReject = "reject"
)

// permissionInput and unsandboxedInput name the questions among a call's
// input requests (multi round-trip requests, SEP-2322): whether the
// command may run, and whether it may run outside the sandbox.
const (
	permissionInput  = "dsh-permission"
	unsandboxedInput = "dsh-unsandboxed"
)

// The choices of the question to run outside the sandbox.
const (
	choiceOutside = "run outside the sandbox, this once"
)

// callState carries a tool call's MCP request to the asker, and the
// questions it could not ask within the call.
type callState struct {
	req       *mcp.CallToolRequest
	needInput mcp.InputRequestMap
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
	key, params := permissionInput, elicitParams(q)
	if q.Unsandboxed {
		key, params = unsandboxedInput, unsandboxedParams(q)
	}
	if res, ok := cs.req.Params.InputResponses[key].(*mcp.ElicitResult); ok {
		return answerOf(res), nil
	}
	if cs.req.ProtocolVersion() >= newProtocol {
		cs.needInput = mcp.InputRequestMap{key: params}
		if !q.Unsandboxed && s.unsandboxed && asksUnsandboxed(q.Call) {
			// Both questions at once: the client's next call brings both
			// answers (the second would otherwise come without the first).
			uq := q
			uq.Unsandboxed = true
			cs.needInput[unsandboxedInput] = unsandboxedParams(uq)
		}
		return toolbash.Reject, errInputNeeded
	}
	res, err := cs.req.Session.Elicit(ctx, params)
	if err != nil {
		return toolbash.Reject, err
	}
	return answerOf(res), nil
}

// asksUnsandboxed reports whether a bash call sets unsandboxed.
func asksUnsandboxed(call *tools.Call) bool {
	var a struct {
		Unsandboxed bool `json:"unsandboxed"`
	}
	_ = json.Unmarshal(call.Args, &a)
	return a.Unsandboxed
}

// unsandboxedParams is the form that asks whether q's call may run
// outside the sandbox: this once, or not.
func unsandboxedParams(q toolbash.Question) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode: "form",
		Message: fmt.Sprintf("The agent asks to run this command OUTSIDE the sandbox, with your full access:\n\n%s\n\nin %s\n\nIts reason: %s",
			q.Command, q.Workdir, q.Description),
		RequestedSchema: &jsonschema.Schema{
			Type:     "object",
			Required: []string{"decision"},
			Properties: map[string]*jsonschema.Schema{"decision": {
				Type: "string", Title: "Run it outside the sandbox?", Enum: anySlice([]string{choiceOutside, choiceReject}),
			}},
		},
	}
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
	case choiceOnce, choiceOutside:
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
