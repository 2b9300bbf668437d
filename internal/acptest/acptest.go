// Package acptest is the editor side of ACP tests: an acp.Client that
// records session updates and answers permission requests as scripted, and
// a reader that makes it a slow editor.
package acptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"

	"github.com/dshgo/dsh/internal/testwait"
)

var _ acp.Client = (*Client)(nil)

// Client is the editor side of a test: it records session updates and
// answers permission requests as Answer says (allow once by default). Its
// file and terminal methods answer "method not found". Make it with New.
type Client struct {
	mu       sync.Mutex
	updates  []acp.SessionNotification
	notify   chan acp.SessionNotification
	answer   func(acp.RequestPermissionRequest) acp.RequestPermissionResponse
	askedFor []acp.RequestPermissionRequest
	terminal func(terminalID, data string)
}

// New makes a Client.
func New() *Client { return &Client{notify: make(chan acp.SessionNotification, 1)} }

// SetAnswer sets how permission requests are answered.
func (c *Client) SetAnswer(fn func(acp.RequestPermissionRequest) acp.RequestPermissionResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answer = fn
}

// SetTerminalOutput hands the data of _meta.terminal_output updates to fn
// instead of recording those updates (a benchmark that streams hundreds of
// megabytes counts them rather than keeping them). Nil: record them.
func (c *Client) SetTerminalOutput(fn func(terminalID, data string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.terminal = fn
}

// Asked returns the permission requests received so far.
func (c *Client) Asked() []acp.RequestPermissionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.RequestPermissionRequest(nil), c.askedFor...)
}

// AgentText joins the agent_message_chunk texts of a session.
func (c *Client) AgentText(sid acp.SessionId) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, n := range c.updates {
		if m := n.Update.AgentMessageChunk; n.SessionId == sid && m != nil && m.Content.Text != nil {
			b.WriteString(m.Content.Text.Text)
		}
	}
	return b.String()
}

func (c *Client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	fn := c.terminal
	if u := n.Update.ToolCallUpdate; fn != nil && u != nil {
		if out, ok := u.Meta["terminal_output"].(map[string]any); ok {
			c.mu.Unlock()
			id, _ := out["terminal_id"].(string)
			data, _ := out["data"].(string)
			fn(id, data)
			return nil
		}
	}
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	select {
	case c.notify <- n:
	default:
	}
	return nil
}

func (c *Client) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.askedFor = append(c.askedFor, p)
	answer := c.answer
	c.mu.Unlock()
	if answer == nil {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected("allow-once")}, nil
	}
	return answer(p), nil
}

func (c *Client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (c *Client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (c *Client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *Client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *Client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *Client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *Client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// SessionUpdates returns the updates of one session as JSON objects.
func (c *Client) SessionUpdates(t testing.TB, sid acp.SessionId) []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, n := range c.updates {
		if n.SessionId != sid {
			continue
		}
		b, err := json.Marshal(n.Update)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		out = append(out, m)
	}
	return out
}

// WaitUpdate waits for an update of sid that pred accepts; the test fails
// if none comes within testwait.Limit.
func (c *Client) WaitUpdate(t testing.TB, sid acp.SessionId, pred func(map[string]any) bool) {
	t.Helper()
	deadline := time.NewTimer(testwait.Limit)
	defer deadline.Stop()
	for {
		for _, u := range c.SessionUpdates(t, sid) {
			if pred(u) {
				return
			}
		}
		select {
		case <-c.notify:
		case <-deadline.C:
			t.Fatalf("no update of session %s that the test waits for within %v; the updates: %v", sid, testwait.Limit, c.SessionUpdates(t, sid))
		}
	}
}

// PacedReader reads r one line at a time, one ACP message, and pauses for
// pause after each: an editor that takes that long over every update before
// it reads the next. Give it to acp.NewClientSideConnection as the agent's
// output, and an agent that writes faster than that blocks on the pipe, as
// it would on a slow editor's stdin. (Slowing the Client's handlers instead
// would not push back: the SDK queues up to 1024 notifications behind a
// busy handler, then drops the connection.)
func PacedReader(r io.Reader, pause time.Duration) io.Reader {
	return &pacedReader{br: bufio.NewReaderSize(r, 64<<10), pause: pause}
}

type pacedReader struct {
	br        *bufio.Reader
	pause     time.Duration
	lineEnded bool
}

func (p *pacedReader) Read(b []byte) (n int, err error) {
	if p.lineEnded {
		time.Sleep(p.pause) // the editor at work, not a wait for an event
	}
	n, p.lineEnded, err = readLine(p.br, b)
	return n, err
}

// Valve passes the agent's output to the client until it is held: from
// the next message on, the client's reads block, and the agent's writes
// behind them, until it is opened again. Give it to
// acp.NewClientSideConnection as the agent's output. Make it with NewValve.
type Valve struct {
	br      *bufio.Reader
	midLine bool // only Read touches it

	mu     sync.Mutex
	held   bool
	opened chan struct{} // closed by Open
}

// NewValve makes an open Valve over r.
func NewValve(r io.Reader) *Valve { return &Valve{br: bufio.NewReader(r)} }

// Hold stops the messages whose first byte the client has not read yet.
func (v *Valve) Hold() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.held {
		v.held, v.opened = true, make(chan struct{})
	}
}

// Open lets the messages through again. A test that holds a Valve opens it
// before it ends (t.Cleanup(v.Open)).
func (v *Valve) Open() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.held {
		v.held = false
		close(v.opened)
	}
}

func (v *Valve) Read(b []byte) (n int, err error) {
	if v.br.Buffered() == 0 {
		if _, err := v.br.Peek(1); err != nil {
			return 0, err
		}
	}
	if !v.midLine { // a message begins: pass it only while open
		v.mu.Lock()
		held, opened := v.held, v.opened
		v.mu.Unlock()
		if held {
			<-opened
		}
	}
	var ended bool
	n, ended, err = readLine(v.br, b)
	v.midLine = !ended
	return n, err
}

// readLine reads into b what br has of the current line, up to and
// including its newline (ended is then true).
func readLine(br *bufio.Reader, b []byte) (n int, ended bool, err error) {
	if len(b) == 0 {
		return 0, false, nil
	}
	if br.Buffered() == 0 {
		if _, err := br.Peek(1); err != nil {
			return 0, false, err
		}
	}
	chunk, _ := br.Peek(min(len(b), br.Buffered()))
	if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
		chunk, ended = chunk[:i+1], true
	}
	n = copy(b, chunk)
	_, _ = br.Discard(n)
	return n, ended, nil
}
