// Package chatapi is a small client for OpenAI-compatible chat-completions
// APIs (OpenAI, DeepSeek, vLLM, llama.cpp, Ollama and the like), over
// net/http and encoding/json. It speaks only what a tool-calling agent
// needs: one streaming request with the conversation and the tool
// definitions, whose text is handed on as it arrives and whose assistant
// message (text and tool calls) is returned once the stream ends.
//
// A request that fails before its answer starts (no connection, 408, 409,
// 429, 5xx) is tried again after a pause; one whose answer has started is
// never tried again.
package chatapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Roles of messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a conversation: the system prompt, the user's
// text, the assistant's answer (text, tool calls or both), or a tool's
// result (with the ID of the call it answers).
type Message struct {
	Role string `json:"role"`
	// Content is the text. An assistant message with tool calls and no
	// text is sent without it, as the API wants.
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// SystemMessage is a system prompt.
func SystemMessage(text string) Message { return Message{Role: RoleSystem, Content: text} }

// UserMessage is a message from the user.
func UserMessage(text string) Message { return Message{Role: RoleUser, Content: text} }

// ToolMessage is the result of the tool call callID.
func ToolMessage(text, callID string) Message {
	return Message{Role: RoleTool, Content: text, ToolCallID: callID}
}

// MarshalJSON leaves the content out of an assistant message that has tool
// calls and no text.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	if m.Role == RoleAssistant && m.Content == "" && len(m.ToolCalls) > 0 {
		return json.Marshal(struct {
			plain
			Content string `json:"content,omitempty"`
		}{plain: plain(m)})
	}
	return json.Marshal(plain(m))
}

// ToolCall is a call the model asks for.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the tool and carries its arguments: JSON text as the
// model wrote it, which may be malformed.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a tool the model may call. Make it with FunctionTool.
type Tool struct {
	Type     string   `json:"type"` // "function"
	Function Function `json:"function"`
}

// Function describes a tool: its name, what it does, and a JSON Schema of
// its arguments.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// FunctionTool is a tool of type "function".
func FunctionTool(name, description string, parameters json.RawMessage) Tool {
	return Tool{Type: "function", Function: Function{Name: name, Description: description, Parameters: parameters}}
}

// Request is one chat-completions request. Stream sends it with
// "stream": true.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
}

// DefaultBaseURL is OpenAI's API: the base URL when neither Client.BaseURL
// nor $OPENAI_BASE_URL names another.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultMaxRetries is how many times a failed request is tried again when
// Client.MaxRetries is zero, as OpenAI's own clients do.
const DefaultMaxRetries = 2

const (
	// maxEvent bounds one line, and one event, of the response stream.
	maxEvent = 8 << 20
	// maxErrorBody bounds what is read of an error response.
	maxErrorBody = 64 << 10
	// maxErrorText bounds the text of an error response that is not JSON,
	// as APIError.Message keeps it.
	maxErrorText = 1 << 10
	// maxServerWait bounds the pause a server may ask for (Retry-After):
	// a longer one is not waited for, and the request fails.
	maxServerWait = 2 * time.Minute
	// firstBackoff is the pause before the first retry when the server
	// does not say; it doubles with each retry, up to maxBackoff, and
	// jitter takes up to a quarter off.
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 8 * time.Second
)

// Client makes chat-completions requests. Its zero value talks to
// $OPENAI_BASE_URL (else OpenAI) with the key $OPENAI_API_KEY, through
// http.DefaultClient, and tries a failed request again twice. A Client is
// safe for concurrent use if its fields are not changed meanwhile.
type Client struct {
	// BaseURL is the API's base, to which "/chat/completions" is added,
	// e.g. "https://api.deepseek.com/v1". Empty: $OPENAI_BASE_URL, else
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY". Empty:
	// $OPENAI_API_KEY; if that is empty too, no Authorization is sent
	// (for a local server).
	APIKey string
	// HTTPClient sends the requests. Nil: http.DefaultClient.
	HTTPClient *http.Client
	// MaxRetries is how many times a request that failed before its answer
	// started is tried again: after a connection error, or a 408, 409, 429
	// or 5xx status (a server's X-Should-Retry header overrides the
	// status). The pause is the server's Retry-After-Ms or Retry-After,
	// else half a second doubling with each retry (up to 8 s) less up to
	// a quarter of jitter; a server asking for more than two minutes is
	// not waited for. Zero: DefaultMaxRetries; negative: none.
	MaxRetries int
}

// APIError is an error the server reported: a status other than 2xx, or an
// error object in the response stream.
type APIError struct {
	// StatusCode is the response's HTTP status (2xx when InStream).
	StatusCode int
	// InStream says the error came as an event of a stream that had
	// begun.
	InStream bool
	// Message is the server's error message, or the start of the
	// response's body when it was not an error object.
	Message string
	// Type and Code are the server's error type and code, where it gave
	// them (e.g. "invalid_request_error", "context_length_exceeded").
	Type, Code string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("chat completions: HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.InStream {
		s = "chat completions: the response stream reported an error"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// errNoChoices is the error of a response that had no choice 0.
var errNoChoices = errors.New("chat completions: the response had no choices")

// Stream sends req with "stream": true to BaseURL/chat/completions, calls
// onText (if not nil) with each piece of the assistant's text as it
// arrives, and returns the assistant's message once the stream ends
// ("data: [DONE]", or the end of the body): its text, and its tool calls,
// in the order they began, with the pieces of their arguments joined. A
// tool call's ID is empty if the server gave none.
//
// A status other than 2xx, after the retries that MaxRetries allows, is an
// *APIError, as is an error object in the stream. When ctx ends, Stream
// returns ctx.Err() at once, waiting or streaming.
func (c *Client) Stream(ctx context.Context, req *Request, onText func(string)) (Message, error) {
	if req == nil {
		return Message{}, errors.New("chatapi: Stream needs a request")
	}
	endpoint, err := c.endpoint()
	if err != nil {
		return Message{}, err
	}
	body, err := json.Marshal(struct {
		*Request
		Stream bool `json:"stream"`
	}{req, true})
	if err != nil {
		return Message{}, fmt.Errorf("chatapi: encoding the request: %w", err)
	}
	res, err := c.send(ctx, endpoint, body)
	if err != nil {
		return Message{}, err
	}
	defer res.Body.Close()
	if onText == nil {
		onText = func(string) {}
	}
	msg, err := readStream(res.Body, onText)
	if err != nil && ctx.Err() != nil {
		return Message{}, ctx.Err()
	}
	var apiErr *APIError
	switch {
	case errors.As(err, &apiErr):
		apiErr.StatusCode = res.StatusCode
	case errors.Is(err, errNoChoices):
		if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "text/event-stream" {
			err = fmt.Errorf("%w (the response was %q, not an event stream)", err, mt)
		}
	}
	return msg, err
}

// endpoint is the URL of the chat-completions endpoint.
func (c *Client) endpoint() (string, error) {
	base := c.BaseURL
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("chatapi: the base URL %q is not an http or https URL", base)
	}
	return u.JoinPath("chat", "completions").String(), nil
}

// send posts body to endpoint, trying again as MaxRetries allows, and
// returns the first 2xx response.
func (c *Client) send(ctx context.Context, endpoint string, body []byte) (*http.Response, error) {
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	key := c.key()
	retries := c.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("chatapi: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := hc.Do(req)
		if ctx.Err() != nil {
			if err == nil {
				res.Body.Close()
			}
			return nil, ctx.Err()
		}
		if err == nil && res.StatusCode/100 == 2 {
			return res, nil
		}
		failure := err
		if err == nil {
			failure = readAPIError(res)
		} else {
			res = nil
		}
		wait, again := retryWait(res, attempt)
		if !again || attempt >= retries {
			if attempt > 0 {
				failure = fmt.Errorf("%w (after %d attempts)", failure, attempt+1)
			}
			return nil, failure
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// retryWait says whether an attempt that failed with res (nil: no
// response) may be tried again, and after what pause.
func retryWait(res *http.Response, attempt int) (time.Duration, bool) {
	if res != nil {
		switch res.Header.Get("X-Should-Retry") {
		case "true":
		case "false":
			return 0, false
		default:
			s := res.StatusCode
			if s != http.StatusRequestTimeout && s != http.StatusConflict && s != http.StatusTooManyRequests && s < 500 {
				return 0, false
			}
		}
		if secs, ok := serverWait(res.Header); ok {
			if secs > maxServerWait.Seconds() {
				return 0, false
			}
			return time.Duration(secs * float64(time.Second)), true
		}
	}
	d := maxBackoff
	if attempt < 5 {
		d = min(firstBackoff<<attempt, maxBackoff)
	}
	return d - rand.N(d/4), true
}

// serverWait is the pause, in seconds, that the response's Retry-After-Ms
// or Retry-After (seconds or an HTTP date) asks for, if either does.
func serverWait(h http.Header) (float64, bool) {
	number := func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		// A number too large to parse is +Inf: a pause too long to wait.
		return f, (err == nil || errors.Is(err, strconv.ErrRange)) && f >= 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, ok := number(v); ok {
			return ms / 1000, true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, ok := number(v); ok {
			return s, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(time.Until(t).Seconds(), 0), true
		}
	}
	return 0, false
}

// readAPIError reads (a bounded part of) an error response's body and
// closes it.
func readAPIError(res *http.Response) *APIError {
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	e := &APIError{StatusCode: res.StatusCode}
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &env) == nil {
		if e.setDetail(env.Error) {
			return e
		}
		if env.Message != "" {
			e.Message = env.Message
			return e
		}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > maxErrorText {
		text = strings.ToValidUTF8(text[:maxErrorText], "") + "…"
	}
	e.Message = text
	return e
}

// setDetail fills e from an API error object ({"message", "type", "code"})
// or string, and says whether raw was one.
func (e *APIError) setDetail(raw json.RawMessage) bool {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		e.Message = text
		return text != ""
	}
	var d struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return false
	}
	e.Message, e.Type = d.Message, d.Type
	if json.Unmarshal(d.Code, &e.Code) != nil && string(d.Code) != "null" {
		e.Code = string(d.Code) // a number
	}
	if e.Message == "" {
		e.Message = string(raw)
	}
	return true
}

// key is the API key the client sends: APIKey, else $OPENAI_API_KEY.
func (c *Client) key() string {
	if c.APIKey != "" {
		return c.APIKey
	}
	return os.Getenv("OPENAI_API_KEY")
}

// HasKey reports whether the client has an API key to send.
func (c *Client) HasKey() bool { return c.key() != "" }
