package acpagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/internal/chatapi"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
)

// Texts the model reads when the user intervenes.
const (
	declinedText   = toolbash.RejectedText
	cancelledText  = "cancelled by the user before it ran"
	unansweredText = "nobody answered the question whether to run this (the prompt turn was cancelled); it did not run."
)

// Prompt runs one turn: model request, tool calls (in order, through the
// registry), results back to the model, until the model stops.
func (a *Agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	s := a.session(p.SessionId)
	if s == nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q", p.SessionId)})
	}
	if err := a.waitConn(ctx); err != nil {
		return acp.PromptResponse{}, err
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	a.prompts.Add(1)
	a.mu.Unlock()
	defer a.prompts.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	if s.cancel != nil {
		s.mu.Unlock()
		return acp.PromptResponse{}, acp.NewInvalidRequest(map[string]any{"error": "a prompt is already running in this session"})
	}
	s.cancel = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
	}()

	s.append(chatapi.UserMessage(promptText(p.Prompt)))
	bridge := &Bridge{Tools: a.reg, Updates: a.conn, TerminalOutput: s.terminal}
	for range a.opts.MaxRounds {
		a.appendNotices(s)
		msg, err := a.complete(ctx, s)
		if ctx.Err() != nil {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
		if err != nil {
			return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": a.modelFailed(err)})
		}
		s.append(msg)
		if len(msg.ToolCalls) == 0 {
			return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		}
		for _, tc := range msg.ToolCalls {
			if ctx.Err() != nil {
				s.append(chatapi.ToolMessage(cancelledText, tc.ID))
				continue
			}
			res := a.runToolCall(ctx, bridge, s, &tools.Call{
				ID: tc.ID, Tool: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments),
				Session: session.Session{ID: s.owner, Cwd: s.cwd},
			})
			s.append(chatapi.ToolMessage(res.Text(), tc.ID))
		}
		if ctx.Err() != nil {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonMaxTurnRequests}, nil
}

// appendNotices adds the notices waiting for the session (its background
// tasks that ended, its connections the sandbox's proxy refused) to its
// history for the next model request, as system messages: they are this
// agent's words about the session, never the user's (a refusal names
// hosts a command chose).
func (a *Agent) appendNotices(s *agentSession) {
	for _, n := range a.tb.TakeNotices(s.owner, 0) {
		s.append(chatapi.SystemMessage(n))
	}
}

// promptText flattens a prompt's blocks into the user message: text as is,
// embedded text resources with their URI, links as links.
func promptText(blocks []acp.ContentBlock) string {
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			parts = append(parts, fmt.Sprintf("<file uri=%q>\n%s\n</file>", r.Uri, r.Text))
		case b.ResourceLink != nil:
			parts = append(parts, fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.Uri))
		}
	}
	return strings.Join(parts, "\n\n")
}

// complete makes one streaming model request, sending the assistant's text
// to the client as agent_message_chunk updates as it arrives.
func (a *Agent) complete(ctx context.Context, s *agentSession) (chatapi.Message, error) {
	req := &chatapi.Request{Model: a.opts.Model, Messages: s.messages(), Tools: a.defs}
	msg, err := a.llm.Stream(ctx, req, func(text string) {
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: s.id, Update: acp.UpdateAgentMessageText(text)})
	})
	if err != nil {
		return chatapi.Message{}, err
	}
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].ID == "" { // some servers omit ids; the protocol needs them
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			msg.ToolCalls[i].ID = "call_" + hex.EncodeToString(b)
		}
	}
	return msg, nil
}

// Permission option ids.
const (
	allowOnce   = "allow-once"
	allowAlways = "allow-always"
	rejectOnce  = "reject-once"
	// rejectAllNew denies every host not yet allowed (network questions).
	rejectAllNew = "reject-all-new"
)

// permission asks the user, with session/request_permission, before a tool
// that wants it; "allow always" holds for that tool in that session.
func (a *Agent) permission(next tools.Handler) tools.Handler {
	return func(ctx context.Context, call *tools.Call) *tools.Result {
		t := a.reg.Tool(call.Tool)
		if a.opts.Yolo || t == nil || !t.AskPermission {
			return next(ctx, call)
		}
		s := a.session(acp.SessionId(call.Session.ID))
		if s == nil {
			return tools.ErrorResult("the session is gone")
		}
		s.mu.Lock()
		ok := s.allowed[call.Tool]
		s.mu.Unlock()
		if ok {
			return next(ctx, call)
		}
		p := a.reg.PresentCall(call.Tool, call.Args)
		chosen, err := a.askPermission(ctx, s.id, permissionCard(acp.ToolCallId(call.ID), p.Title, acp.ToolKind(p.Kind), p.RawInput, ""),
			acp.PermissionOption{OptionId: allowOnce, Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
			acp.PermissionOption{OptionId: allowAlways, Name: "Allow always in this session", Kind: acp.PermissionOptionKindAllowAlways},
			acp.PermissionOption{OptionId: rejectOnce, Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce})
		switch {
		case ctx.Err() != nil:
			notePermission(ctx, "unanswered")
			return tools.ErrorResult("command aborted")
		case errors.Is(err, toolbash.ErrNoAnswer):
			notePermission(ctx, "unanswered")
			return denied(ctx, unansweredText)
		case err != nil:
			notePermission(ctx, "cannot ask")
			return denied(ctx, "could not ask the user for permission: "+err.Error())
		}
		switch chosen {
		case allowAlways:
			notePermission(ctx, "allowed for the session")
			s.mu.Lock()
			s.allowed[call.Tool] = true
			s.mu.Unlock()
			return next(ctx, call)
		case allowOnce:
			notePermission(ctx, "allowed once")
			return next(ctx, call)
		}
		notePermission(ctx, "denied")
		return denied(ctx, declinedText)
	}
}

// askCommand asks the user about a command the permission rules do not
// allow, with session/request_permission: allow once, always allow its
// prefix in this session (when it has one), or reject.
func (a *Agent) askCommand(ctx context.Context, q toolbash.Question) (toolbash.Answer, error) {
	if a.opts.Yolo {
		return toolbash.AllowOnce, nil
	}
	s := a.session(acp.SessionId(q.Call.Session.ID))
	if s == nil {
		return toolbash.Reject, errors.New("the session is gone")
	}
	p := a.reg.PresentCall(q.Call.Tool, q.Call.Args)
	options := []acp.PermissionOption{{OptionId: allowOnce, Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}}
	if len(q.Verdict.Prefixes) > 0 {
		options = append(options, acp.PermissionOption{OptionId: allowAlways, Kind: acp.PermissionOptionKindAllowAlways,
			Name: "Always allow " + quotedList(q.Verdict.Prefixes) + " in this session"})
	}
	options = append(options, acp.PermissionOption{OptionId: rejectOnce, Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce})
	chosen, err := a.askPermission(ctx, s.id, permissionCard(acp.ToolCallId(q.Call.ID), p.Title, acp.ToolKind(p.Kind), p.RawInput, ""), options...)
	if err != nil {
		return toolbash.Reject, err
	}
	switch chosen {
	case allowOnce:
		return toolbash.AllowOnce, nil
	case allowAlways:
		return toolbash.AllowPrefixes, nil
	}
	return toolbash.Reject, nil
}

// askUnsandboxed asks the user, with session/request_permission, whether
// one call may run outside the sandbox: allow once or reject, every time
// (Yolo does not answer it). The question shows the command and the
// model's description as its reason.
func (a *Agent) askUnsandboxed(ctx context.Context, q toolbash.Question) (toolbash.Answer, error) {
	s := a.session(acp.SessionId(q.Call.Session.ID))
	if s == nil {
		return toolbash.Reject, errors.New("the session is gone")
	}
	p := a.reg.PresentCall(q.Call.Tool, q.Call.Args)
	reason := fmt.Sprintf("This command asks to run outside the sandbox, with your full access:\n%s\n%s\nThe model's reason: %s",
		toolbash.Visible(q.Command), q.HowLong(), toolbash.Visible(q.Description))
	chosen, err := a.askPermission(ctx, s.id, permissionCard(acp.ToolCallId(q.Call.ID), "Run OUTSIDE the sandbox: "+p.Title, acp.ToolKind(p.Kind), p.RawInput, reason),
		acp.PermissionOption{OptionId: allowOnce, Name: "Run outside the sandbox, this once", Kind: acp.PermissionOptionKindAllowOnce},
		acp.PermissionOption{OptionId: rejectOnce, Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce})
	switch {
	case err != nil:
		return toolbash.Reject, err
	case chosen == allowOnce:
		return toolbash.AllowOnce, nil
	}
	return toolbash.Reject, nil
}

// askPermission asks the editor's user about card with
// session/request_permission, and returns the option chosen; a
// cancelled turn is no answer of the user's (toolbash.ErrNoAnswer).
func (a *Agent) askPermission(ctx context.Context, sid acp.SessionId, card acp.ToolCallUpdate, options ...acp.PermissionOption) (acp.PermissionOptionId, error) {
	resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: sid, ToolCall: card, Options: options})
	switch {
	case err != nil:
		return "", err
	case resp.Outcome.Selected == nil:
		return "", toolbash.ErrNoAnswer
	}
	return resp.Outcome.Selected.OptionId, nil
}

// permissionCard is the tool call a permission question shows: its id,
// title, kind and raw input, and text, if any, as its content.
func permissionCard(id acp.ToolCallId, title string, kind acp.ToolKind, rawInput any, text string) acp.ToolCallUpdate {
	card := acp.ToolCallUpdate{ToolCallId: id, Title: &title, Kind: &kind, RawInput: rawInput}
	if text != "" {
		card.Content = []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))}
	}
	return card
}

// quotedList is `a`, `b` and `c`.
func quotedList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "`" + s + "`"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// modelFailed is the prompt's error for a failed model request; it says
// when no API key was sent, the likely cause.
func (a *Agent) modelFailed(err error) string {
	msg := "the model request failed: " + err.Error()
	if !a.llm.HasKey() {
		msg += " (no API key is configured: set $OPENAI_API_KEY, or the agent's API key option)"
	}
	return msg
}
