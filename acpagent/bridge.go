package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/internal/coalesce"
	"github.com/dshgo/dsh/tools"
)

// Updater sends ACP session updates; *acp.AgentSideConnection is one.
type Updater interface {
	SessionUpdate(ctx context.Context, n acp.SessionNotification) error
}

// ToolRunner runs tool calls and says how to draw them; *tools.Registry is
// one.
type ToolRunner interface {
	Execute(ctx context.Context, call *tools.Call) *tools.Result
	PresentCall(name string, args json.RawMessage) tools.CallPresentation
	PresentResult(name string, args json.RawMessage, res *tools.Result) tools.ResultPresentation
}

// Bridge turns tool calls into ACP tool_call cards: it asks each tool how to
// draw its call and result (never special-casing a name), runs the call,
// and streams a terminal card's output as it arrives. The zero Bridge is not
// usable: set Tools and Updates.
type Bridge struct {
	Tools   ToolRunner
	Updates Updater
	// TerminalOutput is set when the client announced
	// clientCapabilities._meta.terminal_output = true in initialize (Zed):
	// calls that ask for a terminal are then drawn as terminal cards.
	TerminalOutput bool
}

// RunToolCall draws call as a tool_call in session sid, runs it through
// Tools, and draws its end with a tool_call_update. sessionCwd resolves a
// terminal's relative cwd. It returns the tool's result for the model.
func (b *Bridge) RunToolCall(ctx context.Context, sid acp.SessionId, sessionCwd string, call *tools.Call) *tools.Result {
	p := b.Tools.PresentCall(call.Tool, call.Args)
	terminal := b.TerminalOutput && p.Terminal != nil
	start := &acp.SessionUpdateToolCall{
		SessionUpdate: "tool_call",
		ToolCallId:    acp.ToolCallId(call.ID),
		Title:         p.Title,
		Kind:          acp.ToolKind(p.Kind),
		Status:        acp.ToolCallStatusPending,
		RawInput:      p.RawInput,
		Content:       textContent(p.Content),
	}
	// Pending until it runs: a call may wait for the user's approval first.
	call.Started = func() {
		running := acp.ToolCallStatusInProgress
		b.send(ctx, sid, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
			SessionUpdate: "tool_call_update", ToolCallId: acp.ToolCallId(call.ID), Status: &running}})
	}
	var out *coalesce.Sender
	if terminal {
		start.Content = append(start.Content, acp.ToolTerminalRef(call.ID))
		start.Meta = map[string]any{"terminal_info": map[string]any{"terminal_id": call.ID, "cwd": terminalCwd(p.Terminal.Cwd, sessionCwd)}}
		out = b.liveOutput(ctx, sid, call.ID)
		call.Output = out.Add
	}
	b.send(ctx, sid, acp.SessionUpdate{ToolCall: start})

	res := b.Tools.Execute(ctx, call)

	if terminal {
		if res.IsError {
			// No process exit to show: say why in the terminal itself.
			out.Add([]byte(res.Text() + "\n"))
		}
		out.Close()
	}
	rp := b.Tools.PresentResult(call.Tool, call.Args, res)
	b.send(ctx, sid, acp.SessionUpdate{ToolCallUpdate: endUpdate(call.ID, p, rp, res, terminal)})
	return res
}

// liveOutput streams a terminal card's output as _meta.terminal_output
// updates from a goroutine of its own, so that a slow editor never stalls
// the command's pipes; what an editor too slow to keep up misses is
// skipped, and the terminal says so (SkipMarker).
func (b *Bridge) liveOutput(ctx context.Context, sid acp.SessionId, id string) *coalesce.Sender {
	return coalesce.New(func(p coalesce.Piece) {
		b.send(ctx, sid, acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
			SessionUpdate: "tool_call_update",
			ToolCallId:    acp.ToolCallId(id),
			Meta:          map[string]any{"terminal_output": map[string]any{"terminal_id": id, "data": SkipMarker(p.Skipped) + p.Text}},
		}})
	}, nil)
}

// endUpdate is a call's final tool_call_update. Its status is failed for
// an error result and for a command that exited non-zero or died by a
// signal (the model's text says so too, but is no error), else completed;
// its rawOutput is the result's text, exactly what the model gets. A
// terminal card ends with _meta.terminal_exit and no content (content
// would replace the terminal); any other card with the call's content
// followed by the result's, since an update's content replaces the call's.
func endUpdate(id string, p tools.CallPresentation, rp tools.ResultPresentation, res *tools.Result, terminal bool) *acp.SessionToolCallUpdate {
	status := acp.ToolCallStatusCompleted
	if res.IsError || failedExit(rp.Terminal) {
		status = acp.ToolCallStatusFailed
	}
	end := &acp.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: acp.ToolCallId(id), Status: &status, RawOutput: res.Text()}
	switch {
	case !terminal:
		end.Content = append(textContent(p.Content), textContent(rp.Content)...)
	case rp.Terminal != nil && !res.IsError:
		end.Meta = map[string]any{"terminal_exit": terminalExit(id, rp.Terminal)}
	}
	return end
}

// failedExit tells whether a result's terminal shows a failed command: a
// non-zero exit or a signal death.
func failedExit(t *tools.Terminal) bool {
	return t != nil && (t.Signal != "" || (t.ExitCode != nil && *t.ExitCode != 0))
}

// terminalExit is _meta.terminal_exit for a result's terminal. It always
// has both keys, as the reference adapters send it: {"terminal_id": id,
// "exit_code": N, "signal": null} for an exit, {…, "exit_code": null,
// "signal": "SIGTERM"} for a signal death.
func terminalExit(id string, t *tools.Terminal) map[string]any {
	exit := map[string]any{"terminal_id": id, "exit_code": nil, "signal": nil}
	if t.Signal != "" {
		exit["signal"] = t.Signal
	} else if t.ExitCode != nil {
		exit["exit_code"] = *t.ExitCode
	}
	return exit
}

// SkipMarker is the line a terminal card shows where n bytes of live output
// were skipped because the editor read them more slowly than the command
// printed them: "\r\n[… 12345678 bytes of output skipped …]\r\n", on a line
// of its own. It is empty for n = 0. Only the editor's display skips: the
// model's result is made from the executor's own record of the output.
func SkipMarker(n int64) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("\r\n[… %d bytes of output skipped …]\r\n", n)
}

// send delivers one update; a client gone away is not the tool's failure.
func (b *Bridge) send(ctx context.Context, sid acp.SessionId, u acp.SessionUpdate) {
	_ = b.Updates.SessionUpdate(context.WithoutCancel(ctx), acp.SessionNotification{SessionId: sid, Update: u})
}

func textContent(cs []tools.Content) []acp.ToolCallContent {
	var out []acp.ToolCallContent
	for _, c := range cs {
		out = append(out, acp.ToolContent(acp.TextBlock(c.Text)))
	}
	return out
}

// terminalCwd resolves a tool's terminal cwd against the session cwd.
func terminalCwd(cwd, sessionCwd string) string {
	switch {
	case cwd == "":
		return sessionCwd
	case filepath.IsAbs(cwd) || sessionCwd == "":
		return filepath.Clean(cwd)
	}
	return filepath.Join(sessionCwd, cwd)
}
