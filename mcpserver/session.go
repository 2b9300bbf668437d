package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/dshgo/dsh/observe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootsInput is the id of the roots input request in a tool result.
const rootsInput = "roots"

// newProtocol is the first protocol version in which a server asks for
// roots with an input request instead of a roots/list request.
const newProtocol = "2026-07-28"

// rootsTimeout bounds a classic roots/list request.
const rootsTimeout = 10 * time.Second

// sessionState is what the server keeps for one MCP session.
type sessionState struct {
	s     *Server
	ss    *mcp.ServerSession
	owner string // the owner token of the session's tasks

	calls    context.Context // done once the session ends: its calls abort
	abort    context.CancelFunc
	endOnce  sync.Once
	endTasks chan struct{} // closed once the session's tasks are gone

	inputs inputRounds // questions put within calls, waiting for answers

	mu  sync.Mutex
	cwd string // "" until known

	// For the operators' events (Options.Observe): the session's name,
	// when its start was told (zero: not yet), whether its end was, and
	// why it ends ("" until something says).
	name    string
	started time.Time
	ended   bool
	reason  string
}

func newSessionState(s *Server, ss *mcp.ServerSession) *sessionState {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	calls, abort := context.WithCancel(context.Background())
	st := &sessionState{s: s, ss: ss, owner: "mcp-" + hex.EncodeToString(b),
		calls: calls, abort: abort, endTasks: make(chan struct{})}
	if s.observe != nil {
		st.name = observe.SessionName(st.owner)
	}
	return st
}

// callContext is the context of one tool call of the session: it is done
// when the request's is, or when the session ends.
func (st *sessionState) callContext(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(st.calls, cancel)
	return ctx, func() { stop(); cancel() }
}

// end starts ending the session, once: every call in flight is aborted and
// every task of the session killed, at the same time. The channel is
// closed when the tasks are gone.
func (st *sessionState) end() <-chan struct{} {
	st.endOnce.Do(func() {
		st.abort()
		st.s.wg.Add(1)
		go func() {
			defer st.s.wg.Done()
			defer close(st.endTasks)
			st.s.tb.EndSession(context.Background(), st.owner)
		}()
	})
	return st.endTasks
}

// cwdFor returns the session's working directory. The first time, it asks
// the client for its roots: a client on protocol 2026-07-28 or later gets
// an input request for them (need: it calls again with the answer, and
// the command runs only then); an older client gets a roots/list request.
// Clients without roots, and roots that are not local directories, give
// the server's default.
func (st *sessionState) cwdFor(ctx context.Context, req *mcp.CallToolRequest, answers callAnswers) (cwd string, need mcp.InputRequestMap) {
	st.mu.Lock()
	cwd = st.cwd
	st.mu.Unlock()
	if cwd != "" {
		return cwd, nil
	}
	if resp, ok := answers.responses[rootsInput].(*mcp.ListRootsResult); ok {
		return st.learn(resp), nil
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.RootsV2 == nil {
		return st.learn(nil), nil
	}
	if req.ProtocolVersion() >= newProtocol {
		return "", mcp.InputRequestMap{rootsInput: &mcp.ListRootsParams{}}
	}
	ctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	res, err := st.ss.ListRoots(ctx, nil)
	if err != nil {
		st.s.logger.Warn("roots/list failed; using the default directory", "err", err)
		res = nil
	}
	return st.learn(res), nil
}

// learn caches the cwd the roots give (the first file:// root that is an
// absolute path), else the server default, and returns it.
func (st *sessionState) learn(res *mcp.ListRootsResult) string {
	cwd := st.s.cwd
	if res != nil {
		for _, r := range res.Roots {
			if p, ok := rootPath(r.URI); ok {
				cwd = p
				break
			}
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cwd = cwd
	return cwd
}

// rootPath turns a file:// URI into a clean absolute path.
func rootPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	if !filepath.IsAbs(u.Path) {
		return "", false
	}
	return filepath.Clean(u.Path), true
}

func (st *sessionState) forgetRoots() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cwd = ""
}
