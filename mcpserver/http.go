package mcpserver

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configures the streamable HTTP handler. A nil *HTTPOptions
// means defaults.
type HTTPOptions struct {
	// Token, if set, is required on every request as
	// "Authorization: Bearer TOKEN"; anything else gets 401.
	Token string
	// SessionTimeout ends sessions idle that long (and kills their tasks).
	// Zero: sessions end only when the client ends them or the server stops.
	SessionTimeout time.Duration
}

// HTTPHandler serves the server over MCP's streamable HTTP transport. It
// refuses cross-origin browser requests, and a request with a foreign Host
// header on a loopback address (DNS rebinding).
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	if opts == nil {
		opts = &HTTPOptions{}
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: opts.SessionTimeout,
		Logger:         s.logger,
		// A browser page must not drive the server (the SDK already refuses
		// a foreign Host on loopback, against DNS rebinding).
		CrossOriginProtection: http.NewCrossOriginProtection(),
		// A client that gives up on a call aborts its command.
		PropagateRequestCancellation: true,
	})
	if opts.Token == "" {
		return h
	}
	want := []byte("Bearer " + opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dsh-bash"`)
			http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ListenAddr checks where an HTTP server may listen. An empty host means
// 127.0.0.1. A host that is not loopback (an address on a network, or a
// name other than localhost) is refused unless a token guards the server.
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
		return "", fmt.Errorf("refusing to serve on %s, which is not a loopback address, without a token: anyone who reaches it could run commands here; pass --token, or listen on 127.0.0.1", host)
	}
	return net.JoinHostPort(host, port), nil
}
