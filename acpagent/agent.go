// Package acpagent is the Agent Client Protocol front end: an agent that an
// editor such as Zed runs over stdio, which drives an OpenAI-compatible
// chat-completions model with the shell tools, and a Bridge, reusable by
// any Go ACP agent, that turns tool calls into ACP tool_call cards.
//
// The Bridge draws every call from the tool's own presentation (tools
// Registry.PresentCall and PresentResult), never from its name. When the
// client announces clientCapabilities._meta.terminal_output = true, calls
// that ask for a terminal become Zed terminal cards: the tool_call carries
// _meta.terminal_info and a terminal content block, output streams as
// _meta.terminal_output updates while the command runs (an editor slower
// than the command gets the newest output, at most 64 KiB at a time, and a
// SkipMarker line counting what it missed), and the final update carries
// _meta.terminal_exit (both exit_code and signal, one of them null) and no
// content. Without the capability, a call's content (the description)
// rides on the call and again, followed by the result's (a fenced console
// block), on the final update, whose content replaces the call's. Every
// final update carries the model's text as rawOutput and says failed for
// an error result or a command that exited non-zero or died by a signal.
//
// The Agent keeps one conversation, working directory, owner token and
// terminal capability (as initialize gave it when the session was created)
// per ACP session, asks the client's permission before a tool that wants it
// (bash), unless told not to, aborts the running command and the model
// request on session/cancel, adds background task notices (and the
// refusals of the sandbox's network allowlist, Options.Egress) to the
// session's next model request, and kills a session's tasks when the
// connection ends.
package acpagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/chatapi"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
)

// Options configures an Agent. Model is required.
type Options struct {
	// Model is the chat-completions model, e.g. "deepseek-chat" or "gpt-4.1".
	Model string
	// BaseURL is the OpenAI-compatible API's base, to which
	// "/chat/completions" is added, e.g. "https://api.deepseek.com/v1".
	// Empty: $OPENAI_BASE_URL, else "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY". Empty:
	// $OPENAI_API_KEY; none is sent if that is empty too.
	APIKey string
	// HTTPClient sends the model requests. Nil: http.DefaultClient.
	HTTPClient *http.Client
	// MaxRetries is how many times a model request that failed before its
	// answer began (no connection, or a 408, 409, 429 or 5xx status) is
	// tried again, after the server's Retry-After or a backoff; one whose
	// answer began is not. Zero: 2; negative: none.
	MaxRetries int
	// SystemPrompt replaces the default system prompt; "%s" in it, if any,
	// stands for the session's working directory.
	SystemPrompt string
	// Instructions follow the system prompt: where commands run and what
	// their sandbox allows (dsh-bash gives the MCP server's instructions).
	Instructions string
	// Yolo runs tools without asking the user's permission.
	Yolo bool
	// MaxRounds bounds the model requests of one prompt. Default 100.
	MaxRounds int
	// MaxResultChars is the budget of one tool result's text (see
	// toolbash.Options). Zero: toolbash.DefaultMaxResultChars.
	MaxResultChars int
	// Logger receives diagnostics. Default: discarded.
	Logger *slog.Logger
	// Name and Version identify the agent to clients. Defaults "dsh-bash"
	// and "dev".
	Name, Version string
	// Permissions, if set, checks each bash call against rules (see
	// toolbash.Gate) in place of asking about every call: a denied command
	// never runs, an allowed one runs without asking, and the rest are
	// asked about with session/request_permission ("always" allows the
	// command's prefix for the session). With Yolo, asks are allowed.
	Permissions *toolbash.GateOptions
	// Unsandboxed offers the model the bash argument "unsandboxed" (see
	// toolbash.Options.AskUnsandboxed), for an executor that sandboxes:
	// each call that sets it asks the editor, with session/request_permission,
	// to run that one call outside the sandbox (allow once, or reject).
	// Yolo never answers it.
	Unsandboxed bool
	// Sandbox, if set, says that the executor sandboxes commands and what
	// its sandbox allows: with Unsandboxed, the argument's description
	// says it (see toolbash.Options.Sandbox).
	Sandbox *toolbash.SandboxFacts
	// Egress, if set, is the sandbox's network allowlist: the agent asks
	// the editor's user about the hosts it does not list (AskEgress;
	// Yolo does not answer), and tells the session's model of the
	// connections it refuses, in its next request, until Serve returns.
	// Nil: no allowlist.
	Egress *egress.Proxy
	// Observe, if set, is told what the agent does, for its operators
	// (package observe): each session's start and end, each tool call
	// (filled on its way by the permission gate and the tools), and the
	// end of each background task. Nil: nothing is told, at no cost.
	Observe observe.Sink
	// Containment says where the sessions' commands run and fenced how,
	// for the events of their starts (observe.SessionStart).
	Containment string
}

const defaultSystemPrompt = `You are a coding agent working in the directory %s on the user's machine.
Use the bash tool to inspect and change files and to run programs; each call is a fresh shell, so pass workdir instead of using cd.
Run servers, watchers and other long-running commands with run_in_background, then read their output with bash_output and stop them with bash_kill.
Be concise, and say what you did.`

// Agent is an ACP agent for one connection. Make it with New, run it with
// Serve.
type Agent struct {
	netCards atomic.Uint64 // numbers the network questions' cards (AskEgress)
	exec     bash.Executor
	reg      *tools.Registry
	tb       *toolbash.Tools
	gate     *toolbash.Gate // nil: ask about every call (unless Yolo)
	llm      *chatapi.Client
	opts     Options
	logger   *slog.Logger
	defs     []chatapi.Tool

	ready   chan struct{} // closed once conn is set
	conn    *acp.AgentSideConnection
	prompts sync.WaitGroup // running prompt turns

	mu       sync.Mutex
	closed   bool               // shutdown has begun: no new prompt starts
	terminal bool               // the latest initialize announced Zed terminal cards
	client   acp.Implementation // what the latest initialize said the client is
	sessions map[acp.SessionId]*agentSession
}

// New makes an agent whose tools run on exec (which stays the caller's).
func New(exec bash.Executor, opts *Options) (*Agent, error) {
	if opts == nil || opts.Model == "" {
		return nil, errors.New("acpagent: a model is required")
	}
	a := &Agent{
		exec:     exec,
		reg:      &tools.Registry{},
		opts:     *opts,
		logger:   opts.Logger,
		llm:      &chatapi.Client{BaseURL: opts.BaseURL, APIKey: opts.APIKey, HTTPClient: opts.HTTPClient, MaxRetries: opts.MaxRetries},
		ready:    make(chan struct{}),
		sessions: map[acp.SessionId]*agentSession{},
	}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	if a.opts.MaxRounds <= 0 {
		a.opts.MaxRounds = 100
	}
	if a.opts.SystemPrompt == "" {
		a.opts.SystemPrompt = defaultSystemPrompt
	}
	to := &toolbash.Options{MaxResultChars: opts.MaxResultChars, Sandbox: opts.Sandbox, Observe: opts.Observe}
	if opts.Unsandboxed {
		to.AskUnsandboxed = a.askUnsandboxed
	}
	a.tb = toolbash.New(exec, to)
	if err := a.tb.Register(a.reg); err != nil {
		return nil, err
	}
	if opts.Permissions != nil {
		g := *opts.Permissions
		if g.Ask == nil {
			g.Ask = a.askCommand
		}
		a.gate = toolbash.NewGate(&g)
		a.reg.Use(a.gate.Middleware)
	} else {
		a.reg.Use(a.permission)
	}
	for _, t := range a.reg.Tools() {
		params, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("acpagent: the schema of %s: %w", t.Name, err)
		}
		a.defs = append(a.defs, chatapi.FunctionTool(t.Name, t.Description, params))
	}
	if opts.Egress != nil {
		opts.Egress.SetFront(a.AskEgress, a.egressRefused)
	}
	return a, nil
}

// Registry returns the agent's tool registry, for adding tools or
// middleware before Serve.
func (a *Agent) Registry() *tools.Registry { return a.reg }

// Serve speaks ACP on r and w until the client closes the connection or ctx
// is done. Then it cancels every prompt, waits for them, and kills every
// session's running tasks. Call it once.
func (a *Agent) Serve(ctx context.Context, w io.Writer, r io.Reader) error {
	// The SDK reads its logger, unguarded, from the goroutines that
	// NewAgentSideConnection starts, all of which wait for input first:
	// holding the input back until the logger is set orders the two.
	gate := &gatedReader{r: r, open: make(chan struct{})}
	a.conn = acp.NewAgentSideConnection(a, w, gate)
	a.conn.SetLogger(a.logger)
	close(gate.open)
	close(a.ready)
	reason := endClosed
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
		reason = endShutdown
	}
	a.shutdown(reason)
	return nil
}

// gatedReader holds its reads back until open is closed.
type gatedReader struct {
	r    io.Reader
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// shutdown cancels every prompt and kills every session's tasks; the
// sessions end for reason (see observe.SessionEnd).
func (a *Agent) shutdown(reason string) {
	a.mu.Lock()
	a.closed = true
	var all []*agentSession
	for _, s := range a.sessions {
		all = append(all, s)
	}
	a.sessions = map[acp.SessionId]*agentSession{}
	a.mu.Unlock()
	for _, s := range all {
		s.cancelPrompt()
	}
	a.prompts.Wait()
	for _, s := range all {
		a.endSession(s, reason)
	}
	if a.opts.Egress != nil {
		a.opts.Egress.SetFront(nil, nil)
	}
	a.tb.Close()
}

func (a *Agent) waitConn(ctx context.Context) error {
	select {
	case <-a.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Initialize records the client's capabilities for the sessions created
// after it.
func (a *Agent) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	terminal, _ := p.ClientCapabilities.Meta["terminal_output"].(bool)
	a.mu.Lock()
	a.terminal = terminal
	a.client = acp.Implementation{}
	if p.ClientInfo != nil {
		a.client = *p.ClientInfo
	}
	a.mu.Unlock()
	name, version := a.opts.Name, a.opts.Version
	if name == "" {
		name = "dsh-bash"
	}
	if version == "" {
		version = "dev"
	}
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: name, Version: version},
		AgentCapabilities: acp.AgentCapabilities{
			PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true},
		},
		AuthMethods: []acp.AuthMethod{},
	}, nil
}

// Authenticate has nothing to do: the model's credentials are the agent's.
func (a *Agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

// NewSession starts a conversation in an absolute working directory.
func (a *Agent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if !filepath.IsAbs(p.Cwd) {
		return acp.NewSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd must be an absolute path, got %q", p.Cwd)})
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := acp.SessionId("sess-" + hex.EncodeToString(b))
	s := &agentSession{id: id, owner: string(id), cwd: filepath.Clean(p.Cwd), allowed: map[string]bool{}}
	s.history = []chatapi.Message{chatapi.SystemMessage(systemPrompt(a.opts.SystemPrompt, s.cwd, a.opts.Instructions))}
	a.mu.Lock()
	s.terminal = a.terminal
	client := a.client
	a.sessions[id] = s
	a.mu.Unlock()
	a.announce(s, client, p.AdditionalDirectories)
	return acp.NewSessionResponse{SessionId: id}, nil
}

func systemPrompt(tmpl, cwd, instructions string) string {
	if strings.Contains(tmpl, "%s") {
		tmpl = strings.ReplaceAll(tmpl, "%s", cwd)
	}
	if instructions != "" {
		tmpl += "\n\n" + instructions
	}
	return tmpl
}

// Cancel aborts the session's running prompt: its model request and its
// command.
func (a *Agent) Cancel(ctx context.Context, p acp.CancelNotification) error {
	if s := a.session(p.SessionId); s != nil {
		s.cancelPrompt()
	}
	return nil
}

// CloseSession cancels the session's work, kills its tasks and forgets it.
func (a *Agent) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[p.SessionId]
	delete(a.sessions, p.SessionId)
	a.mu.Unlock()
	if s != nil {
		s.cancelPrompt()
		a.endSession(s, endClosed)
	}
	return acp.CloseSessionResponse{}, nil
}

// ListSessions lists the connection's sessions.
func (a *Agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out acp.ListSessionsResponse
	for _, s := range a.sessions {
		out.Sessions = append(out.Sessions, acp.SessionInfo{SessionId: s.id, Cwd: s.cwd})
	}
	return out, nil
}

// ResumeSession is not supported: sessions live as long as the connection.
func (a *Agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

// SetSessionConfigOption is not supported.
func (a *Agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

// SetSessionMode is not supported.
func (a *Agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetMode)
}

func (a *Agent) session(id acp.SessionId) *agentSession {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// agentSession is one ACP session: its conversation, cwd and owner token,
// and whether its client takes terminal cards (as the client said before
// the session was created: a later initialize does not change it).
type agentSession struct {
	id       acp.SessionId
	owner    string
	cwd      string
	terminal bool
	name     string    // for the operators' events: observe.SessionName(owner)
	started  time.Time // when the session started

	mu      sync.Mutex
	history []chatapi.Message
	cancel  context.CancelFunc // of the running prompt
	allowed map[string]bool    // tools the user allowed for the session
}

func (s *agentSession) cancelPrompt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
}

func (s *agentSession) append(msgs ...chatapi.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = append(s.history, msgs...)
}

func (s *agentSession) messages() []chatapi.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chatapi.Message(nil), s.history...)
}

// endSession kills the session's tasks and forgets what its user
// allowed; the session ended for reason (see observe.SessionEnd).
func (a *Agent) endSession(s *agentSession, reason string) {
	a.tb.EndSession(context.Background(), s.owner)
	if a.gate != nil {
		a.gate.EndSession(s.owner)
	}
	a.announceEnd(s, reason)
}
