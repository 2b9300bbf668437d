package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// callState carries a tool call's MCP request and the answers it brought
// to the asker.
type callState struct {
	req     *mcp.CallToolRequest
	answers callAnswers
}

type callStateKey struct{}

// elicit asks the session's user about a command by elicitation (form
// mode), where the client declared it can: on the current protocol, as an
// input request the client answers by calling again; on older ones, by an
// elicitation request within the call.
func (s *Server) elicit(ctx context.Context, q toolbash.Question) (toolbash.Answer, error) {
	cs, _ := ctx.Value(callStateKey{}).(*callState)
	if cs == nil || !canElicit(cs.req.ClientCapabilities()) {
		return toolbash.Reject, toolbash.ErrCannotAsk
	}
	key, params := permissionInput, elicitParams(q)
	if q.Unsandboxed {
		key, params = unsandboxedInput, unsandboxedParams(q)
	}
	if res, ok := cs.answers.responses[key].(*mcp.ElicitResult); ok {
		if asked, _ := cs.answers.asked[key].(*mcp.ElicitParams); asked != nil && sameForm(asked, params) {
			return answerTo(params, res)
		}
		// The answer was to another question (the rules or the session's
		// directory changed between the rounds): ask this one.
	}
	if cs.req.ProtocolVersion() >= newProtocol {
		need := &inputNeeded{requests: mcp.InputRequestMap{key: params}}
		if !q.Unsandboxed && s.unsandboxed {
			if uq, ok := unsandboxedQuestion(q); ok {
				// Both questions at once: the client's next call brings
				// both answers (the second would otherwise come without
				// the first).
				need.requests[unsandboxedInput] = unsandboxedParams(uq)
			}
		}
		return toolbash.Reject, need
	}
	res, err := cs.req.Session.Elicit(ctx, params)
	if err != nil {
		return toolbash.Reject, err
	}
	return answerTo(params, res)
}

// unsandboxedQuestion is the question whether q's bash call may run
// outside the sandbox, where the call asks for that.
func unsandboxedQuestion(q toolbash.Question) (toolbash.Question, bool) {
	var a struct {
		Unsandboxed bool `json:"unsandboxed"`
		Background  bool `json:"run_in_background"`
	}
	if q.Call == nil || json.Unmarshal(q.Call.Args, &a) != nil || !a.Unsandboxed {
		return q, false
	}
	q.Unsandboxed, q.Background = true, a.Background
	return q, true
}

// unsandboxedParams is the form that asks whether q's call may run
// outside the sandbox: this once, or not.
func unsandboxedParams(q toolbash.Question) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode: "form",
		Message: fmt.Sprintf("The agent asks to run this command OUTSIDE the sandbox, with your full access:\n\n%s\n\nin %s\n\n%s\n\nIts reason: %s",
			toolbash.Visible(q.Command), toolbash.Visible(q.Workdir), q.HowLong(), toolbash.Visible(q.Description)),
		RequestedSchema: decisionForm("Run it outside the sandbox?", "", []string{choiceOutside, choiceReject}),
	}
}

// inputNeeded is the asker's error where its questions go back to the
// client as input requests, in the call's result: the client answers by
// calling again. The call's result carries it to the handler
// (tools.Result.Err).
type inputNeeded struct {
	requests mcp.InputRequestMap
}

func (*inputNeeded) Error() string { return "the client answers by calling again" }

// elicitParams is the form that asks about q.
func elicitParams(q toolbash.Question) *mcp.ElicitParams {
	choices := []string{choiceOnce}
	desc := "allow once, or reject"
	if len(q.Verdict.Prefixes) > 0 {
		choices = append(choices, choiceAlways)
		desc = "always allow in this session: " + toolbash.Visible(strings.Join(q.Verdict.Prefixes, ", "))
	}
	choices = append(choices, choiceReject)
	return &mcp.ElicitParams{
		Mode:            "form",
		Message:         elicitMessage(q),
		RequestedSchema: decisionForm("Run this command?", desc, choices),
	}
}

// decisionForm is a form of one required choice, "decision".
func decisionForm(title, desc string, choices []string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:     "object",
		Required: []string{"decision"},
		Properties: map[string]*jsonschema.Schema{"decision": {
			Type: "string", Title: title, Enum: anySlice(choices), Description: desc,
		}},
	}
}

// formChoices are the choices of a decision form.
func formChoices(p *mcp.ElicitParams) []any {
	s, _ := p.RequestedSchema.(*jsonschema.Schema)
	if s == nil || s.Properties["decision"] == nil {
		return nil
	}
	return s.Properties["decision"].Enum
}

// sameForm reports whether two questions are the same to the user.
func sameForm(a, b *mcp.ElicitParams) bool {
	return a.Message == b.Message && slices.Equal(formChoices(a), formChoices(b))
}

// errNotAChoice: an answer that is none of its question's choices.
var errNotAChoice = errors.New("the client's answer is not one of the question's choices")

// answerTo reads the user's answer to the question form asked (see
// chosen).
func answerTo(form *mcp.ElicitParams, res *mcp.ElicitResult) (toolbash.Answer, error) {
	d, err := chosen(form, res)
	switch d {
	case choiceOnce, choiceOutside:
		return toolbash.AllowOnce, err
	case choiceAlways:
		return toolbash.AllowPrefixes, err
	}
	return toolbash.Reject, err
}

// chosen is the choice an answer to the question form asked picked:
// "decline" picks none (the user's no); "cancel" is no answer (the client
// dismissed the question without the user's answer: toolbash.ErrNoAnswer,
// which nothing remembers); "accept" must pick one of the form's own
// choices, and nothing else (errNotAChoice).
func chosen(form *mcp.ElicitParams, res *mcp.ElicitResult) (string, error) {
	switch res.Action {
	case "decline":
		return "", nil
	case "cancel":
		return "", toolbash.ErrNoAnswer
	case "accept":
	default:
		return "", errNotAChoice
	}
	d, ok := res.Content["decision"].(string)
	if !ok || len(res.Content) != 1 || !slices.Contains(formChoices(form), any(d)) {
		return "", errNotAChoice
	}
	return d, nil
}

// canElicit reports whether a client declared it can be asked by a form.
func canElicit(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil // an empty object means form
}

func elicitMessage(q toolbash.Question) string {
	return fmt.Sprintf("The agent wants to run a command that needs your approval (%s):\n\n%s\n\nin %s",
		toolbash.Visible(q.Verdict.Reason), toolbash.Visible(q.Command), toolbash.Visible(q.Workdir))
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// withoutUnsandboxed is a tools/list result for a client that cannot be
// asked: the bash tool without the argument unsandboxed, whose every call
// would be refused there.
func withoutUnsandboxed(res *mcp.ListToolsResult) *mcp.ListToolsResult {
	out := *res
	out.Tools = slices.Clone(res.Tools)
	for i, t := range out.Tools {
		s, ok := t.InputSchema.(*jsonschema.Schema)
		if t.Name != toolbash.BashName || !ok || s.Properties["unsandboxed"] == nil {
			continue
		}
		ns := *s
		ns.Properties = map[string]*jsonschema.Schema{}
		for k, v := range s.Properties {
			if k != "unsandboxed" {
				ns.Properties[k] = v
			}
		}
		nt := *t
		nt.InputSchema = &ns
		out.Tools[i] = &nt
	}
	return &out
}

// perSession gives each session what works for its client: the bash
// argument unsandboxed, and instructions that tell of it, only where the
// client declared it can be asked.
func (s *Server) perSession(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || !s.unsandboxed {
			return res, err
		}
		// The client's capabilities only for the results that depend on
		// them: reading them may decode the request's _meta.
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			if !canElicit(clientCaps(req)) {
				return withoutUnsandboxed(r), nil
			}
		case *mcp.InitializeResult:
			if s.mute != "" && !canElicit(clientCaps(req)) {
				c := *r
				c.Instructions = s.mute
				return &c, nil
			}
		case *mcp.DiscoverResult:
			if s.mute != "" && !canElicit(clientCaps(req)) {
				c := *r
				c.Instructions = s.mute
				return &c, nil
			}
		}
		return res, nil
	}
}

// clientCaps are the capabilities a request's client declared: in the
// request (protocol 2026-07-28), at initialization (before), or in the
// initialize request itself.
func clientCaps(req mcp.Request) *mcp.ClientCapabilities {
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok {
		return p.Capabilities
	}
	if r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok {
		return r.ClientCapabilities()
	}
	return nil
}
