package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// A client that gives up on a call over streamable HTTP closes its POST
// (Claude Code does, when the user interrupts) instead of sending
// notifications/cancelled. Since the server keeps no events to resume a
// stream with, the call's answer can never reach it: the call is cancelled
// as if the client had said so, and its command aborted. (The SDK's
// PropagateRequestCancellation does this only for protocol 2026-07-28.)

// maxBodyBytes bounds the request bodies read to find their calls, as the
// SDK bounds them (mcp.DefaultMaxRequestBodyBytes).
const maxBodyBytes = 4 << 20

// readCalls reads r's body, puts it back for the handler, and returns the
// ids of the JSON-RPC calls in it (a message or a batch of them).
func readCalls(w http.ResponseWriter, r *http.Request) []json.RawMessage {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	if err != nil {
		return nil
	}
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var msgs []msg
	if json.Unmarshal(body, &msgs) != nil {
		var one msg
		if json.Unmarshal(body, &one) != nil {
			return nil
		}
		msgs = []msg{one}
	}
	var ids []json.RawMessage
	for _, m := range msgs {
		if m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// errReader returns err (or EOF) once the body read before it is done, so
// that the handler sees the same failure a direct read would have.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// cancelCalls tells the SDK's handler that the client of r gave up on the
// calls with these ids, with a notifications/cancelled of the same session.
func cancelCalls(sdk http.Handler, r *http.Request, ids []json.RawMessage) {
	for _, id := range ids {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the client closed the request"}}`, id)
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.URL.String(), strings.NewReader(body))
		if err != nil {
			continue
		}
		req.Header = r.Header.Clone()
		req.Header.Del("Content-Length")
		req.Host = r.Host
		sdk.ServeHTTP(discard{h: http.Header{}}, req)
	}
}

// discard is a ResponseWriter that drops the response.
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}

// bodyDeadline bounds how long a request's body may take to arrive, so
// that a client that sends headers and then stalls holds neither a handler
// nor, for a new session, a place under the session cap. The deadline is
// lifted once the body has been read, so a response stream may last.
func bodyDeadline(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if d <= 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
		return
	}
	r.Body = &liftAtEOF{ReadCloser: r.Body, rc: rc}
}

type liftAtEOF struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (b *liftAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
