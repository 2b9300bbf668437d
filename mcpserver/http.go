package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configures the streamable HTTP front end. A nil *HTTPOptions
// means defaults; so does a zero field.
type HTTPOptions struct {
	// Token is required on every request as "Authorization: Bearer TOKEN"
	// (the scheme in any case); anything else gets 401. With no Token and
	// no NoAuth every request gets 401: the handler fails closed.
	Token string
	// NoAuth serves without a token. Only for a listener other local users
	// cannot reach (see Listen, which allows it on loopback and unix
	// sockets only).
	NoAuth bool
	// SessionTimeout ends sessions that get no POST that long (the SDK's
	// idle timeout), killing their tasks. Zero: never.
	SessionTimeout time.Duration
	// SessionGrace ends a session whose client has gone: no request in
	// flight and no open stream (a GET stream, or the stream of a POST)
	// that long. Its calls are aborted and its tasks killed; a request with
	// its Mcp-Session-Id within the grace keeps it. Default
	// DefaultSessionGrace; negative: never.
	SessionGrace time.Duration
	// MaxSessions caps the open sessions. Past it a new session gets HTTP
	// 503 with a JSON-RPC error saying so; open sessions are unaffected.
	// Default DefaultMaxSessions; negative: no cap.
	MaxSessions int
	// BodyTimeout bounds how long a request's body may take to arrive once
	// its headers have (a stalled upload holds a handler, and for a new
	// session a place under the cap). Default DefaultBodyTimeout; negative:
	// no bound.
	BodyTimeout time.Duration
	// Metrics, if set, is served at /metrics (GET), behind the token as
	// every other path: the operators' Prometheus metrics.
	Metrics http.Handler
	// Ready says whether the server can serve a new session now (the
	// sandbox starts jails, a warm pool is filled); ReadyPath answers
	// 503 while it returns an error. Nil: always ready.
	Ready func(ctx context.Context) error
	// ReadyReuse is how long an answer of Ready answers the ready probes
	// that follow it. Ready runs once at a time, whoever probes, and the
	// probes that come meanwhile share its answer. Default
	// DefaultReadyReuse; negative: every probe that finds no call of
	// Ready running makes one.
	ReadyReuse time.Duration
	// RetryAfter is what a new session refused while the handler drains
	// (see HTTPHandler.Drain) is told to wait, in the Retry-After header
	// (rounded up to whole seconds). Default DefaultRetryAfter.
	RetryAfter time.Duration

	// The fields below are used by ServeStreamable only.

	// ReadHeaderTimeout bounds how long a connection may take to send a
	// request's headers. Default DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request that long.
	// Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// FlushTimeout is how long, once every session has ended at shutdown,
	// responses still being written may take before their connections are
	// cut. Default DefaultFlushTimeout.
	FlushTimeout time.Duration
	// Drain, once it is closed, makes ServeStreamable drain (see
	// HTTPHandler.Drain) for at most DrainTimeout, then shut down as when
	// its context is done. Nil: never.
	Drain <-chan struct{}
	// OnDrain, if set, is called once the drain Drain began holds: new
	// sessions are refused and ReadyPath answers 503 from then on, and
	// the calls in flight are being waited for. For a message saying so.
	OnDrain func()
	// DrainTimeout bounds how long a drain waits for the calls in flight.
	// Default DefaultDrainTimeout; negative: it does not wait.
	DrainTimeout time.Duration
}

// Defaults of HTTPOptions.
const (
	DefaultSessionGrace      = 2 * time.Minute
	DefaultMaxSessions       = 64
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultFlushTimeout      = 500 * time.Millisecond
	DefaultBodyTimeout       = 30 * time.Second
	DefaultReadyReuse        = time.Second
	DefaultRetryAfter        = time.Second
	DefaultDrainTimeout      = 30 * time.Second
)

// withDefaults is a copy of o (nil: the zero options) with defaults filled.
func (o *HTTPOptions) withDefaults() HTTPOptions {
	var c HTTPOptions
	if o != nil {
		c = *o
	}
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&c.SessionGrace, DefaultSessionGrace)
	set(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	set(&c.IdleTimeout, DefaultIdleTimeout)
	set(&c.FlushTimeout, DefaultFlushTimeout)
	set(&c.BodyTimeout, DefaultBodyTimeout)
	set(&c.ReadyReuse, DefaultReadyReuse)
	set(&c.RetryAfter, DefaultRetryAfter)
	set(&c.DrainTimeout, DefaultDrainTimeout)
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	return c
}

// HTTPHandler serves a Server over MCP's streamable HTTP transport; make it
// with Server.HTTPHandler. Beyond the SDK's handler it checks the bearer
// token, caps the open sessions, ends the sessions of clients that have
// gone, makes DELETE abort the session's calls in flight, answers the
// probes HealthPath and ReadyPath, and drains.
type HTTPHandler struct {
	sdk      *mcp.StreamableHTTPHandler
	noAuth   bool
	wantHash [sha256.Size]byte // of the token; "" with NoAuth
	haveAuth bool              // a token or NoAuth was configured
	sessions *httpSessions
	bodyWait time.Duration // see HTTPOptions.BodyTimeout
	metrics  http.Handler  // HTTPOptions.Metrics
	ready    *readiness
}

// HTTPHandler makes the streamable HTTP handler of s. It refuses
// cross-origin browser requests, and a request with a foreign Host header
// on a loopback address (DNS rebinding). It adds a middleware to s that
// lets it abort calls, so make one handler per Server. Close it (or close
// s) when done.
func (s *Server) HTTPHandler(opts *HTTPOptions) *HTTPHandler {
	o := opts.withDefaults()
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: o.SessionTimeout,
		Logger:         s.logger,
		// A browser page must not drive the server (the SDK already refuses
		// a foreign Host on loopback, against DNS rebinding).
		CrossOriginProtection: http.NewCrossOriginProtection(),
		// A client that gives up on a call aborts its command (protocol
		// 2026-07-28; before it, see http_cancel.go).
		PropagateRequestCancellation: true,
	})
	h := &HTTPHandler{
		sdk:      sdk,
		noAuth:   o.NoAuth,
		wantHash: sha256.Sum256([]byte(o.Token)),
		haveAuth: o.NoAuth || o.Token != "",
		sessions: newHTTPSessions(s, o.SessionGrace, o.MaxSessions, o.RetryAfter),
		bodyWait: o.BodyTimeout,
		metrics:  o.Metrics,
		ready:    newReadiness(o.Ready, o.ReadyReuse, s.logger),
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.probe(w, r) { // no token: see http_health.go
		return
	}
	if !h.authorized(r) {
		unauthorized(w, r)
		return
	}
	if h.metrics != nil && r.URL.Path == "/metrics" {
		h.metrics.ServeHTTP(w, r)
		return
	}
	bodyDeadline(w, r, h.bodyWait)
	h.sessions.serve(w, r, h.sdk)
}

// Close ends every session the handler serves at once (their calls in
// flight are aborted and their tasks killed) and refuses new ones. It
// returns when they have ended.
func (h *HTTPHandler) Close() error {
	h.sessions.close()
	h.ready.close()
	return nil
}

// Sessions reports how many sessions are open.
func (h *HTTPHandler) Sessions() int { return h.sessions.count() }

// authorized reports whether r carries the bearer token, comparing in
// constant time (hashes, so that not even the length leaks).
func (h *HTTPHandler) authorized(r *http.Request) bool {
	if h.noAuth {
		return true
	}
	if !h.haveAuth {
		return false
	}
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return false
	}
	got := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], h.wantHash[:]) == 1
}

// bearerToken is the token of an Authorization header "Bearer TOKEN", the
// scheme in any case (RFC 9110 §11.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}

func unauthorized(w http.ResponseWriter, r *http.Request) {
	challenge := `Bearer realm="dsh-bash"`
	if r.Header.Get("Authorization") != "" {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, unauthorizedText(r.Header.Get("Authorization") != ""), http.StatusUnauthorized)
}

// unauthorizedText is a 401's body: what to send, for the user who reads
// it in a client's log (a client that gets no header starts OAuth, which
// this server does not do).
func unauthorizedText(sent bool) string {
	if sent {
		return "the bearer token sent is not this server's: send Authorization: Bearer TOKEN with the token of its --token-file (or $DSH_BASH_TOKEN, or the generated file whose path it printed at start)"
	}
	return "this server needs a bearer token, and no OAuth: configure the client to send the header Authorization: Bearer TOKEN, with the token of the server's --token-file (or $DSH_BASH_TOKEN, or the generated file whose path it printed at start)"
}

// ListenAddr checks where an HTTP server may listen on TCP. An empty host
// means 127.0.0.1. A host that is not loopback (an address on a network, or
// a name other than localhost) is refused unless a token guards the server.
func ListenAddr(addr string, haveToken bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q is not HOST:PORT: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	loopback := strings.EqualFold(host, "localhost")
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	if !loopback && !haveToken {
		return "", fmt.Errorf("refusing to serve on %s, which is not a loopback address, without a token: anyone who reaches it could run commands here; drop --no-auth, or listen on 127.0.0.1", host)
	}
	return net.JoinHostPort(host, port), nil
}
