package chatapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/testwait"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient starts a server with h and returns a client of it, with its
// own connections (closed when the test ends) and no retries: a test that
// wants them sets MaxRetries.
func newClient(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &Client{BaseURL: srv.URL, APIKey: "test-key", MaxRetries: -1, HTTPClient: &http.Client{Transport: tr}}
}

var hello = &Request{Model: "m", Messages: []Message{UserMessage("hi")}}

// stream is c.Stream(hello) within testwait.Limit: the message, the pieces
// of text handed on, and the error.
func stream(c *Client) (Message, []string, error) {
	var pieces []string
	msg, err := testwait.Reply("the end of the stream", func(ctx context.Context) (Message, error) {
		return c.Stream(ctx, hello, func(s string) { pieces = append(pieces, s) })
	})
	return msg, pieces, err
}

// events is an event stream: one event a data payload.
func events(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		fmt.Fprintf(&b, "data: %s\n\n", d)
	}
	return b.String()
}

// text is a chunk with a piece of choice 0's text.
func text(s string) string {
	b, _ := json.Marshal(s)
	return fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`, b)
}

// call is a chunk with a piece of a tool call of choice 0.
func call(index int, id, name, args string) string {
	b, _ := json.Marshal(args)
	return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}}]}`,
		index, id, name, b)
}

const (
	role   = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	finish = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

// serve answers with body as an event stream, a few bytes at a time, so
// that lines and events straddle reads.
func serve(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for len(body) > 0 {
			n := min(len(body), 7)
			io.WriteString(w, body[:n])
			w.(http.Flusher).Flush()
			body = body[n:]
		}
	}
}

// pieces splits s into pieces of n bytes.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out, s = append(out, s[:n]), s[n:]
	}
	return append(out, s)
}

func toolCall(id, name, args string) ToolCall {
	return ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: name, Arguments: args}}
}

func TestStream(t *testing.T) {
	t.Parallel()
	args := `{"command":"echo hello world","description":"Say hello"}`
	var argEvents []string
	for i, p := range pieces(args, 3) {
		if i == 0 {
			argEvents = append(argEvents, call(0, "call_a", "bash", p))
		} else {
			argEvents = append(argEvents, call(0, "", "", p))
		}
	}
	tests := []struct {
		name   string
		body   string
		want   Message
		pieces []string
	}{{
		name:   "text",
		body:   events(role, text("Hel"), text("lo"), finish, "[DONE]"),
		want:   Message{Role: RoleAssistant, Content: "Hello"},
		pieces: []string{"Hel", "lo"},
	}, {
		name: "tool call arguments in many events",
		body: events(append(append([]string{role}, argEvents...), "[DONE]")...),
		want: Message{Role: RoleAssistant, ToolCalls: []ToolCall{toolCall("call_a", "bash", args)}},
	}, {
		name: "two tool calls interleaved",
		body: events(call(0, "c0", "bash", `{"command":`), call(1, "c1", "bash_output", `{"task_id"`),
			call(0, "", "", `"ls"}`), call(1, "", "", `:"bash-1"}`), "[DONE]"),
		want: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
			toolCall("c0", "bash", `{"command":"ls"}`), toolCall("c1", "bash_output", `{"task_id":"bash-1"}`)}},
	}, {
		name: "text then tool calls",
		body: events(role, text("Let me look."), call(0, "c0", "bash", `{"command":"ls"}`),
			call(1, "c1", "bash", `{"command":"pwd"}`), "[DONE]"),
		want: Message{Role: RoleAssistant, Content: "Let me look.", ToolCalls: []ToolCall{
			toolCall("c0", "bash", `{"command":"ls"}`), toolCall("c1", "bash", `{"command":"pwd"}`)}},
		pieces: []string{"Let me look."},
	}, {
		name: "a tool call without an id",
		body: events(call(0, "", "bash", `{}`), "[DONE]"),
		want: Message{Role: RoleAssistant, ToolCalls: []ToolCall{toolCall("", "bash", `{}`)}},
	}, {
		name:   "the body ends without [DONE]",
		body:   events(role, text("a"), text("b")),
		want:   Message{Role: RoleAssistant, Content: "ab"},
		pieces: []string{"a", "b"},
	}, {
		name:   "nothing after [DONE] is read",
		body:   events(text("a"), "[DONE]", text("b"), "{not json"),
		want:   Message{Role: RoleAssistant, Content: "a"},
		pieces: []string{"a"},
	}, {
		name: "framing: comments, other fields, CRLF, data lines joined, last event unterminated",
		body: ": keep-alive\r\n\r\nevent: message\r\nid: 1\r\nretry: 100\r\ndata:" + text("a") + "\r\n\r\n" +
			"data: {\"choices\":\ndata: [{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n\n\n" +
			"data: " + text("c"),
		want:   Message{Role: RoleAssistant, Content: "abc"},
		pieces: []string{"a", "b", "c"},
	}, {
		name: "other choices, null fields and usage are passed over",
		body: events(`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":null,"tool_calls":null}}]}`,
			text("mine"), `{"choices":[],"usage":{"prompt_tokens":1}}`, `{"error":null,"choices":[]}`, "[DONE]"),
		want:   Message{Role: RoleAssistant, Content: "mine"},
		pieces: []string{"mine"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			msg, got, err := stream(newClient(t, serve(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(msg, tc.want) {
				t.Errorf("message:\n got %+v\nwant %+v", msg, tc.want)
			}
			if !reflect.DeepEqual(got, tc.pieces) {
				t.Errorf("text pieces: got %q, want %q", got, tc.pieces)
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int    // 0: 200
		contentType string // "": text/event-stream
		body        string
		want        string    // in the error
		api         *APIError // the error, if it is one
	}{{
		name: "malformed event",
		body: events(text("a"), `{"choices":[`),
		want: "a malformed event in the response stream",
	}, {
		name: "error object in the stream",
		body: events(text("a"), `{"error":{"message":"overloaded","type":"server_error","code":"busy"}}`),
		want: "chat completions: the response stream reported an error: overloaded",
		api:  &APIError{StatusCode: 200, InStream: true, Message: "overloaded", Type: "server_error", Code: "busy"},
	}, {
		name: "no choices",
		body: events(`{"choices":[]}`, "[DONE]"),
		want: "the response had no choices",
	}, {
		name:        "not an event stream",
		contentType: "application/json",
		body:        `{"choices":[{"index":0,"message":{"content":"hi"}}]}`,
		want:        `the response had no choices (the response was "application/json", not an event stream)`,
	}, {
		name: "a line too long",
		body: "data: " + strings.Repeat("x", maxEvent+1) + "\n\n",
		want: "a line of the response stream is longer than 8 MiB",
	}, {
		name: "an event too long",
		body: strings.Repeat("data: "+strings.Repeat("x", 1<<20)+"\n", 9),
		want: "an event of the response stream is longer than 8 MiB",
	}, {
		name:   "status with an error object",
		status: 400,
		body:   `{"error":{"message":"no such model","type":"invalid_request_error","code":"model_not_found"}}`,
		want:   "chat completions: HTTP 400 Bad Request: no such model",
		api:    &APIError{StatusCode: 400, Message: "no such model", Type: "invalid_request_error", Code: "model_not_found"},
	}, {
		name:   "status with a numeric code",
		status: 400,
		body:   `{"error":{"message":"too long","code":400}}`,
		api:    &APIError{StatusCode: 400, Message: "too long", Code: "400"},
	}, {
		name:   "status with an error string",
		status: 401,
		body:   `{"error":"no key"}`,
		api:    &APIError{StatusCode: 401, Message: "no key"},
	}, {
		name:   "status with a bare message",
		status: 422,
		body:   `{"message":"bad tools","detail":[]}`,
		api:    &APIError{StatusCode: 422, Message: "bad tools"},
	}, {
		name:   "status with text",
		status: 404,
		body:   "404 page not found\n",
		want:   "chat completions: HTTP 404 Not Found: 404 page not found",
		api:    &APIError{StatusCode: 404, Message: "404 page not found"},
	}, {
		name:   "status with a long text",
		status: 502,
		body:   "a" + strings.Repeat("é", 100<<10),
		api:    &APIError{StatusCode: 502, Message: "a" + strings.Repeat("é", maxErrorText/2-1) + "…"},
	}, {
		name:   "status without a body",
		status: 500,
		want:   "chat completions: HTTP 500 Internal Server Error",
		api:    &APIError{StatusCode: 500},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
				ct := tc.contentType
				if ct == "" {
					ct = "text/event-stream"
				}
				w.Header().Set("Content-Type", ct)
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				io.WriteString(w, tc.body)
			})
			_, _, err := stream(c)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			var api *APIError
			if errors.As(err, &api) != (tc.api != nil) {
				t.Fatalf("error %q (%T): is it an *APIError? want %v", err, err, tc.api != nil)
			}
			if tc.api != nil && !reflect.DeepEqual(api, tc.api) {
				t.Errorf("error:\n got %+v\nwant %+v", api, tc.api)
			}
		})
	}
}

// TestRequest checks what goes on the wire.
func TestRequest(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 1)
	var body []byte
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		got <- r
		serve(events(text("ok")))(w, r)
	})
	c.BaseURL += "/v1/"
	req := &Request{
		Model: "deepseek-chat",
		Messages: []Message{
			SystemMessage("be brief"),
			UserMessage(""),
			{Role: RoleAssistant, ToolCalls: []ToolCall{toolCall("c1", "bash", `{"command":"ls"}`)}},
			ToolMessage("a b", "c1"),
			{Role: RoleAssistant, Content: "Done."},
		},
		Tools: []Tool{FunctionTool("bash", "Run a command", json.RawMessage(`{"type": "object"}`))},
	}
	_, err := testwait.Reply("the end of the stream", func(ctx context.Context) (Message, error) {
		return c.Stream(ctx, req, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	r := testwait.Recv(t, got, "the request")
	if r.Method != "POST" || r.URL.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	for k, v := range map[string]string{"Authorization": "Bearer test-key", "Content-Type": "application/json", "Accept": "text/event-stream"} {
		if r.Header.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, r.Header.Get(k), v)
		}
	}
	want := `{"model":"deepseek-chat","stream":true,"messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":""},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
		{"role":"tool","content":"a b","tool_call_id":"c1"},
		{"role":"assistant","content":"Done."}],
		"tools":[{"type":"function","function":{"name":"bash","description":"Run a command","parameters":{"type":"object"}}}]}`
	var gotJSON, wantJSON any
	if err := json.Unmarshal(body, &gotJSON); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	json.Unmarshal([]byte(want), &wantJSON)
	if !reflect.DeepEqual(gotJSON, wantJSON) {
		t.Errorf("body:\n got %s\nwant %s", body, want)
	}
}

// TestDefaults checks that a Client's empty fields come from the
// environment, and that its fields win.
func TestDefaults(t *testing.T) {
	type seen struct{ path, auth string }
	got := make(chan seen, 1)
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.Path, r.Header.Get("Authorization")}
		serve(events(text("ok")))(w, r)
	})
	base := c.BaseURL
	tests := []struct {
		name           string
		envURL, envKey string
		url, key       string
		want           seen
	}{
		{"environment", base + "/env", "env-key", "", "", seen{"/env/chat/completions", "Bearer env-key"}},
		{"fields win", base + "/env", "env-key", base + "/field", "field-key", seen{"/field/chat/completions", "Bearer field-key"}},
		{"no key", base, "", "", "", seen{"/chat/completions", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENAI_BASE_URL", tc.envURL)
			t.Setenv("OPENAI_API_KEY", tc.envKey)
			c := &Client{BaseURL: tc.url, APIKey: tc.key, HTTPClient: c.HTTPClient}
			if _, _, err := stream(c); err != nil {
				t.Fatal(err)
			}
			if s := testwait.Recv(t, got, "the request"); s != tc.want {
				t.Errorf("got %+v, want %+v", s, tc.want)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	for base, want := range map[string]string{
		"":                          "https://api.openai.com/v1/chat/completions",
		"http://127.0.0.1:8080":     "http://127.0.0.1:8080/chat/completions",
		"http://127.0.0.1:8080/v1/": "http://127.0.0.1:8080/v1/chat/completions",
		"https://h.example/openai/deployments/d?api-version=1": "https://h.example/openai/deployments/d/chat/completions?api-version=1",
	} {
		if got, err := (&Client{BaseURL: base}).endpoint(); got != want || err != nil {
			t.Errorf("base URL %q: endpoint %q, %v; want %q", base, got, err, want)
		}
	}
}

func TestBadBaseURL(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"ftp://example.com/v1", "localhost:8080", "http://", "http://a b/"} {
		_, _, err := stream(&Client{BaseURL: base})
		if err == nil || !strings.Contains(err.Error(), "is not an http or https URL") {
			t.Errorf("base URL %q: error %v", base, err)
		}
	}
}

// reply is one scripted answer: a status (200: a stream of "ok") and
// headers.
type reply struct {
	status int
	header []string // name, value, ...
}

func TestRetry(t *testing.T) {
	t.Parallel()
	ms1 := []string{"Retry-After-Ms", "1"}
	ok := reply{status: 200}
	tests := []struct {
		name       string
		maxRetries int
		replies    []reply
		attempts   int
		status     int // of the error; 0: success
	}{
		{"429 then 503 then success, by default", 0, []reply{{429, ms1}, {503, ms1}, ok}, 3, 0},
		{"408 and 409 are retried", 2, []reply{{408, ms1}, {409, ms1}, ok}, 3, 0},
		{"the retries run out", 1, []reply{{429, ms1}, {500, ms1}, ok}, 2, 500},
		{"the default is two retries", 0, []reply{{429, ms1}, {429, ms1}, {429, ms1}, ok}, 3, 429},
		{"no retries", -1, []reply{{503, ms1}, ok}, 1, 503},
		{"400 is not retried", 2, []reply{{400, ms1}, ok}, 1, 400},
		{"X-Should-Retry false", 2, []reply{{500, []string{"X-Should-Retry", "false", "Retry-After-Ms", "1"}}, ok}, 1, 500},
		{"X-Should-Retry true", 2, []reply{{400, []string{"X-Should-Retry", "true", "Retry-After-Ms", "1"}}, ok}, 2, 0},
		{"Retry-After too long to wait", 2, []reply{{429, []string{"Retry-After", "3600"}}, ok}, 1, 429},
		{"Retry-After-Ms too long to wait", 2, []reply{{429, []string{"Retry-After-Ms", "1e300"}}, ok}, 1, 429},
		{"Retry-After-Ms before Retry-After", 2, []reply{{429, []string{"Retry-After-Ms", "1", "Retry-After", "3600"}}, ok}, 2, 0},
		{"Retry-After zero", 2, []reply{{429, []string{"Retry-After", "0"}}, ok}, 2, 0},
		{"Retry-After a date gone by", 2, []reply{{503, []string{"Retry-After", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)}}, ok}, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
				rp := tc.replies[min(int(n.Add(1)), len(tc.replies))-1]
				if rp.status == 200 {
					serve(events(text("ok")))(w, r)
					return
				}
				for i := 0; i+1 < len(rp.header); i += 2 {
					w.Header().Set(rp.header[i], rp.header[i+1])
				}
				w.WriteHeader(rp.status)
				fmt.Fprintf(w, `{"error":{"message":"attempt %d"}}`, n.Load())
			})
			c.MaxRetries = tc.maxRetries
			start := time.Now()
			msg, _, err := stream(c)
			if got := int(n.Load()); got != tc.attempts {
				t.Errorf("%d attempts, want %d", got, tc.attempts)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v: it waited", d)
			}
			var api *APIError
			switch {
			case tc.status == 0 && err != nil:
				t.Fatal(err)
			case tc.status == 0 && msg.Content != "ok":
				t.Errorf("message %+v", msg)
			case tc.status != 0 && !errors.As(err, &api):
				t.Fatalf("error %v, want an *APIError", err)
			case tc.status != 0 && api.StatusCode != tc.status:
				t.Errorf("status %d, want %d", api.StatusCode, tc.status)
			case tc.status != 0 && tc.attempts > 1 && !strings.HasSuffix(err.Error(), fmt.Sprintf("attempt %d (after %d attempts)", tc.attempts, tc.attempts)):
				t.Errorf("error %q does not give the last attempt's message and the count", err)
			}
		})
	}
}

// TestRetryWaits checks the pauses between attempts: the server's, and
// the backoff after a connection error.
func TestRetryWaits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fail  func(w http.ResponseWriter)
		least time.Duration
	}{
		{"Retry-After-Ms", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After-Ms", "300")
			w.WriteHeader(429)
		}, 300 * time.Millisecond},
		{"a connection cut: backoff", func(w http.ResponseWriter) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, firstBackoff * 3 / 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					tc.fail(w)
					return
				}
				serve(events(text("ok")))(w, r)
			})
			c.MaxRetries = 1
			start := time.Now()
			if _, _, err := stream(c); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < tc.least {
				t.Errorf("the retry came after %v, want %v or more", d, tc.least)
			}
			if n.Load() != 2 {
				t.Errorf("%d attempts, want 2", n.Load())
			}
		})
	}
}

// TestCancelWhileWaiting checks that ctx ends the pause before a retry.
func TestCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 10)
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(503)
		arrived <- struct{}{}
	})
	c.MaxRetries = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(ctx, hello, nil)
		done <- err
	}()
	testwait.Recv(t, arrived, "the first attempt")
	time.Sleep(50 * time.Millisecond) // into the pause, most likely
	cancel()
	if err := testwait.Recv(t, done, "the end of Stream once cancelled"); err != context.Canceled {
		t.Errorf("error %v, want ctx.Err(), context.Canceled", err)
	}
	if len(arrived) != 0 {
		t.Errorf("%d more attempts", len(arrived))
	}
}

// TestNoRetryOnceStreaming checks that a stream that began and then failed
// is not tried again.
func TestNoRetryOnceStreaming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		then func(w http.ResponseWriter)
		want string
	}{
		{"connection cut", func(w http.ResponseWriter) { panic(http.ErrAbortHandler) }, "reading the response stream: unexpected EOF"},
		{"error event", func(w http.ResponseWriter) {
			io.WriteString(w, events(`{"error":{"message":"overloaded"}}`))
		}, "reported an error: overloaded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				serve(events(text("partial")))(w, r)
				tc.then(w)
			})
			c.MaxRetries = 2
			_, got, err := stream(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if n.Load() != 1 {
				t.Errorf("%d attempts, want 1", n.Load())
			}
			if !reflect.DeepEqual(got, []string{"partial"}) {
				t.Errorf("text pieces %q", got)
			}
		})
	}
}

// TestCancelMidStream checks that ctx ends a stream that has begun: Stream
// returns, and the server sees the request end.
func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		serve(events(text("first")))(w, r)
		select {
		case <-r.Context().Done():
			close(ended)
		case <-time.After(testwait.Limit):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(ctx, hello, func(string) { cancel() })
		done <- err
	}()
	if err := testwait.Recv(t, done, "the end of Stream once cancelled"); err != context.Canceled {
		t.Errorf("error %v, want ctx.Err(), context.Canceled", err)
	}
	testwait.Recv(t, ended, "the end of the request at the server")
}
