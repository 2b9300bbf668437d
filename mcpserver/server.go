// Package mcpserver serves the shell tools over the Model Context Protocol,
// with the official Go SDK, so that any MCP client (Claude Code, Codex,
// Cursor, Zed, the MCP Inspector) can use them.
//
// Every tool of a tools.Registry becomes an MCP tool with the same name,
// description, input schema and texts; a tool's error result is an MCP
// isError result, and protocol errors are kept for protocol faults.
//
// One MCP session is one owner: each session gets a random owner token, so
// two clients never read or kill each other's background tasks, and a
// session's running tasks are killed when the session ends. A session's
// working directory is the client's first file:// root, asked for on the
// session's first tool call (with roots/list for clients before protocol
// 2026-07-28, with an input request in the call's result from then on) and
// kept for the session until the client says its roots changed; without
// roots it is Options.Cwd. Background task notices for a session ride
// along with its next tool result, as extra text blocks, and go out as log
// notifications where the client asked for them; so do (in the result
// alone) the refusals of the sandbox's network allowlist (Options.Egress),
// whose questions about unlisted hosts the server puts to the session's
// user. A call made with a
// progress token gets the command's live output as progress notifications
// (bytes so far, and the latest line as the message).
package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/coalesce"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures a Server. A nil *Options means defaults.
type Options struct {
	// Cwd is the working directory of a session whose client has no roots.
	// Default: the process cwd.
	Cwd string
	// Name and Version identify the server to clients. Defaults "dsh-bash"
	// and "dev".
	Name, Version string
	// MaxResultChars is the budget of one tool result's text (see
	// toolbash.Options). Zero: toolbash.DefaultMaxResultChars.
	MaxResultChars int
	// Logger receives the server's own diagnostics. Default: discarded.
	Logger *slog.Logger
	// SupportedProtocolVersions narrows the MCP protocol versions served
	// (see mcp.ServerOptions). Empty: all the SDK supports.
	SupportedProtocolVersions []string
	// Instructions are sent to clients at initialization (the MCP
	// server instructions), for example that commands are not sandboxed.
	Instructions string
	// CannotAskInstructions, if set, are the instructions of a session
	// whose client did not declare elicitation, where they differ: they
	// must not tell the model to set unsandboxed, which is not listed to
	// such a session (see Unsandboxed). Empty: Instructions.
	CannotAskInstructions string
	// Permissions, if set, checks each bash call against rules (see
	// toolbash.Gate). Where its Ask is nil, the server asks the user by
	// elicitation when the client declared it, and otherwise answers an
	// ask with a denial that says how to add a rule.
	Permissions *toolbash.GateOptions
	// Unsandboxed offers the model the bash argument "unsandboxed" (see
	// toolbash.Options.AskUnsandboxed), for an executor that sandboxes:
	// each call that sets it asks the user by elicitation, every time, to
	// run that one call outside the sandbox. The argument is listed only
	// to sessions whose client declared elicitation; a call that sets it
	// anyway is refused.
	Unsandboxed bool
	// Sandbox, if set, says that the executor sandboxes commands and what
	// its sandbox allows: with Unsandboxed, the argument's description
	// says it (see toolbash.Options.Sandbox).
	Sandbox *toolbash.SandboxFacts
	// Egress, if set, is the sandbox's network allowlist: the server asks
	// its users about the hosts it does not list (AskEgress), and tells
	// their models of the connections it refuses, beside their next tool
	// result, until Close. Nil: no allowlist.
	Egress *egress.Proxy
	// Observe, if set, is told what the server does, for its operators
	// (package observe): each session's start and end, each tool call
	// (filled on its way by the permission gate and the tools), and the
	// end of each background task. Nil: nothing is told, at no cost.
	Observe observe.Sink
	// Containment says where the sessions' commands run and fenced how,
	// for the events of their starts (observe.SessionStart).
	Containment string
}

// Server is an MCP server for the shell tools over one executor. Make it with
// New; Close it when done. The executor stays the caller's to close.
type Server struct {
	exec        bash.Executor
	reg         *tools.Registry
	tb          *toolbash.Tools
	gate        *toolbash.Gate // nil: no permission rules
	egress      *egress.Proxy  // nil: no network allowlist
	unsandboxed bool           // the bash argument unsandboxed is offered (Options.Unsandboxed)
	mute        string         // Options.CannotAskInstructions
	mcp         *mcp.Server
	cwd         string
	logger      *slog.Logger
	observe     observe.Sink // Options.Observe
	containment string       // Options.Containment

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*sessionState
	owners   map[string]*sessionState
	closed   bool
	wg       sync.WaitGroup // session watchers, log sends, task kills
}

// New makes a server with the five shell tools over exec.
func New(exec bash.Executor, opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := &Server{
		exec:     exec,
		reg:      &tools.Registry{},
		cwd:      opts.Cwd,
		logger:   opts.Logger,
		observe:  opts.Observe,
		sessions: map[*mcp.ServerSession]*sessionState{},
		owners:   map[string]*sessionState{},
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		s.cwd = wd
	}
	s.unsandboxed, s.mute, s.containment = opts.Unsandboxed, opts.CannotAskInstructions, opts.Containment
	if err := s.makeTools(exec, opts); err != nil {
		return nil, err
	}
	name, version := opts.Name, opts.Version
	if name == "" {
		name = "dsh-bash"
	}
	if version == "" {
		version = "dev"
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, &mcp.ServerOptions{
		Logger:                    s.logger,
		RootsListChangedHandler:   s.rootsChanged,
		SupportedProtocolVersions: opts.SupportedProtocolVersions,
		Instructions:              opts.Instructions,
	})
	s.mcp.AddReceivingMiddleware(s.trackSessions, s.perSession)
	for _, t := range s.reg.Tools() {
		s.mcp.AddTool(mcpTool(t), s.handler(t.Name))
	}
	if s.egress = opts.Egress; s.egress != nil {
		s.egress.SetFront(s.AskEgress, s.egressRefused)
	}
	return s, nil
}

// makeTools makes the server's shell tools over exec, behind the
// permission gate where opts has rules; the server asks its users by
// elicitation.
func (s *Server) makeTools(exec bash.Executor, opts *Options) error {
	to := &toolbash.Options{Notify: s.notify, MaxResultChars: opts.MaxResultChars, Sandbox: opts.Sandbox, Observe: opts.Observe}
	if opts.Unsandboxed {
		to.AskUnsandboxed = s.elicit
	}
	s.tb = toolbash.New(exec, to)
	if opts.Permissions != nil {
		g := *opts.Permissions
		if g.Ask == nil {
			g.Ask = s.elicit
		}
		s.gate = toolbash.NewGate(&g)
		s.reg.Use(s.gate.Middleware)
	}
	if err := s.tb.Register(s.reg); err != nil {
		s.tb.Close()
		return err
	}
	return nil
}

// MCP returns the underlying SDK server, to serve it on a transport of the
// caller's choice.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one session on t (for example an in-memory transport) until
// the client disconnects or ctx is done; then that session's calls are
// aborted and its tasks killed, at once. For stdio, ServeStdio is hardened
// against misbehaving clients.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.serve(ctx, t, nil, nil, func() {})
}

// ServeStdio serves one session over newline-delimited JSON on in and out
// (the process's stdin and stdout, for a client that started the server).
// A line that is not a JSON-RPC message is answered with an error and the
// session goes on; a cancelled request gets no response; when in ends or a
// write to out fails, the client is gone: every call in flight is aborted
// and every task of the session killed at once, the requests already read
// are answered, and ServeStdio returns. It returns too when ctx is done.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, opts *StdioOptions) error {
	conn := newStdioConn(in, out, opts)
	return s.serve(ctx, connTransport{conn}, conn.gone, conn.broken, conn.stopWrites)
}

// serve runs a session until its connection ends or ctx is done. When gone
// is closed, the session's work is aborted at once while the connection
// finishes answering; when broken is closed, nothing more can reach the
// client and the session ends as when ctx is done. stopWrites, called when
// ctx is done, makes the connection's writes fail at once, so that no
// handler waits on a client that stopped reading.
func (s *Server) serve(ctx context.Context, t mcp.Transport, gone, broken <-chan struct{}, stopWrites func()) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	st := s.session(ss)
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	for {
		select {
		case err = <-done:
		case <-gone:
			gone = nil
			if st != nil {
				st.end() // abort at once; the connection answers what it read
			}
			continue
		case <-broken:
			s.closeSession(ss)
			err = <-done
		case <-ctx.Done():
			stopWrites()
			s.endReason(ss, endShutdown)
			s.closeSession(ss)
			<-done
			err = ctx.Err()
		}
		break
	}
	s.endSession(ss)
	if errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// Close ends every session at once: calls in flight are aborted, tasks
// killed and connections closed, all together, and it returns when that is
// done and the server's goroutines are gone. It does not close the
// executor.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	var all []*mcp.ServerSession
	for ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ss := range all {
		s.endReason(ss, endShutdown)
		wg.Go(func() { s.closeSession(ss) })
	}
	wg.Wait()
	if s.egress != nil {
		s.egress.SetFront(nil, nil)
	}
	s.tb.Close()
	s.wg.Wait()
	return nil
}

// stopSession aborts a session's calls in flight and kills its tasks, all
// at once, and returns when the tasks are gone. The session stays known
// (a late call of it is aborted) until its connection ends.
func (s *Server) stopSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	st := s.sessions[ss]
	s.mu.Unlock()
	if st != nil {
		<-st.end()
	}
}

// closeSession ends a session now: its calls are aborted and its tasks
// killed while its connection closes (which waits for the calls to return).
func (s *Server) closeSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	st := s.sessions[ss]
	s.mu.Unlock()
	var ended <-chan struct{}
	if st != nil {
		ended = st.end()
	}
	ss.Close()
	if ended != nil {
		<-ended
	}
}

// mcpTool turns a registry tool into its MCP definition.
func mcpTool(t *tools.Tool) *mcp.Tool {
	return &mcp.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: t.InputSchema,
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.Annotations.ReadOnly,
			DestructiveHint: t.Annotations.Destructive,
			IdempotentHint:  t.Annotations.Idempotent,
			OpenWorldHint:   t.Annotations.OpenWorld,
		},
	}
}

// handler runs a tools/call of the named tool through the registry.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st := s.session(req.Session)
		if st == nil {
			return nil, errors.New("the server is shutting down")
		}
		ctx, stop := st.callContext(ctx)
		defer stop()
		obs := st.observeCall(name)
		if obs != nil {
			ctx = observe.WithCall(ctx, obs)
		}
		out, asking := s.callTool(ctx, st, name, req)
		if !asking {
			s.finishCall(ctx, obs, out)
		}
		return out, nil
	}
}

// callTool runs a tools/call of the named tool through the registry, and
// adds the session's notices to its result; asking says the result only
// asks the client for answers, with which it calls again.
func (s *Server) callTool(ctx context.Context, st *sessionState, name string, req *mcp.CallToolRequest) (_ *mcp.CallToolResult, asking bool) {
	cs := &callState{req: req}
	var err error
	if cs.answers, err = st.inputs.answersFor(name, req.Params); err != nil {
		observe.CallFrom(ctx).Fail(observe.OutcomeInvalid, unaskedText(err))
		return errorResult(unaskedText(err)), false
	}
	cwd, need := st.cwdFor(ctx, req, cs.answers)
	if need != nil {
		return st.askInput(name, req, need, cs.answers), true // the client answers with its roots and calls again
	}
	call := &tools.Call{Tool: name, Args: req.Params.Arguments, Session: session.Session{ID: st.owner, Cwd: cwd}}
	var progress *coalesce.Sender
	if tok := req.Params.GetProgressToken(); tok != nil {
		progress = progressSender(ctx, req.Session, tok)
		call.Output = progress.Add
	}
	res := s.reg.Execute(context.WithValue(ctx, callStateKey{}, cs), call)
	if progress != nil {
		progress.Close() // every progress notification precedes the result
	}
	if need, ok := errors.AsType[*inputNeeded](res.Err); ok {
		// The user's answers come with the client's next call.
		return st.askInput(name, req, need.requests, cs.answers), true
	}
	out := &mcp.CallToolResult{IsError: res.IsError}
	for _, c := range res.Content {
		out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
	}
	if st.calls.Err() != nil {
		return out, false // the session is ending: its tasks' deaths are ours, not news
	}
	// Within the result's budget: clients cut a long result, losing
	// its own text. Each after a blank line, in a block of its own: a
	// client that joins a result's blocks without a separator (Codex
	// does) still shows the notices apart from the result.
	for _, n := range s.tb.TakeNotices(st.owner, utf8.RuneCountInString(res.Text())) {
		out.Content = append(out.Content, &mcp.TextContent{Text: "\n\n" + n})
	}
	return out, false
}

// askInput is the result of a call that needs the client's answers
// first: its questions, and the request state under which the session
// keeps them (with the answers the call brought) for the call that
// answers.
func (st *sessionState) askInput(tool string, req *mcp.CallToolRequest, need mcp.InputRequestMap, earlier callAnswers) *mcp.CallToolResult {
	state := st.inputs.put(tool, req.Params.Arguments, need, earlier)
	return &mcp.CallToolResult{InputRequests: need, RequestState: state}
}

// errorResult is an error result of one text block.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// progressEvery paces progress notifications.
const progressEvery = 100 * time.Millisecond

// progressSender turns a call's live output into progress notifications for
// a client that asked for them: progress counts the bytes of output so far,
// and the message is its latest line.
func progressSender(ctx context.Context, ss *mcp.ServerSession, tok any) *coalesce.Sender {
	var bytes float64
	return coalesce.New(func(p coalesce.Piece) {
		bytes += float64(p.Skipped) + float64(len(p.Text))
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: bytes, Message: lastLine(p.Text)})
	}, &coalesce.Options{Every: progressEvery})
}

// lastLine is the last non-blank line of text, at most 200 characters.
func lastLine(text string) string {
	text = strings.TrimRight(text, "\r\n\t ")
	l := strings.TrimSpace(text[strings.LastIndexByte(text, '\n')+1:])
	if utf8.RuneCountInString(l) > 200 {
		r := []rune(l)
		l = string(r[:199]) + "…"
	}
	return l
}

// trackSessions registers every session on its first message, whatever the
// protocol version (2026-07-28 sessions have no initialize).
func (s *Server) trackSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			if st := s.session(ss); st != nil && method != methodDiscover {
				st.announce(req)
			}
		}
		return next(ctx, method, req)
	}
}

// session returns the state of ss, making it (and a watcher that cleans up
// when the session ends) on first sight; nil once the server is closed.
func (s *Server) session(ss *mcp.ServerSession) *sessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.sessions[ss]; ok {
		return st
	}
	if s.closed {
		return nil
	}
	st := newSessionState(s, ss)
	s.sessions[ss] = st
	s.owners[st.owner] = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.Wait()
		s.endSession(ss)
	}()
	return st
}

// endSession ends a session whose connection is over (aborting its calls
// and killing its tasks) and forgets it. Every caller returns only once
// that is done.
func (s *Server) endSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	st := s.sessions[ss]
	s.mu.Unlock()
	if st == nil {
		return
	}
	<-st.end()
	s.mu.Lock()
	delete(s.sessions, ss)
	delete(s.owners, st.owner)
	s.mu.Unlock()
	if s.gate != nil {
		s.gate.EndSession(st.owner)
	}
	st.announceEnd()
}

// notify sends a completion notice as a log notification, which reaches
// clients that set a level; the notice also waits in toolbash for the
// session's next tool result.
func (s *Server) notify(owner, text string) {
	s.mu.Lock()
	st := s.owners[owner]
	if st == nil || s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		_ = st.ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "dsh-bash", Data: text})
	}()
}

// rootsChanged forgets the cached cwd of the session whose roots changed.
func (s *Server) rootsChanged(_ context.Context, req *mcp.RootsListChangedRequest) {
	s.mu.Lock()
	st := s.sessions[req.Session]
	s.mu.Unlock()
	if st != nil {
		st.forgetRoots()
	}
}
