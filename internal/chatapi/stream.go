package chatapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// chunk is one event of a chat-completions stream: a
// chat.completion.chunk object, or an error object.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Error json.RawMessage `json:"error"`
}

// readStream reads a server-sent event stream of chunks (data lines, events
// separated by blank lines, other fields and comments ignored) until
// "data: [DONE]" or the body's end, and returns the message of choice 0.
func readStream(body io.Reader, onText func(string)) (Message, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var acc accumulator
	var data []byte
	pending := false // a data line came since the last event
	for {
		more := sc.Scan()
		line := sc.Bytes()
		if !more || len(line) == 0 {
			if pending {
				done, err := acc.add(data, onText)
				if err != nil {
					return Message{}, err
				}
				if done {
					return acc.message()
				}
			}
			if !more {
				break
			}
			data, pending = data[:0], false
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue // a comment (no name), event, id or retry
		}
		if pending {
			data = append(data, '\n')
		}
		data = append(data, bytes.TrimPrefix(value, []byte(" "))...)
		pending = true
		if len(data) > maxEvent {
			return Message{}, fmt.Errorf("chat completions: an event of the response stream is longer than %d MiB", maxEvent>>20)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Message{}, fmt.Errorf("chat completions: a line of the response stream is longer than %d MiB", maxEvent>>20)
		}
		return Message{}, fmt.Errorf("chat completions: reading the response stream: %w", err)
	}
	return acc.message()
}

// accumulator joins the deltas of choice 0 into the assistant's message.
type accumulator struct {
	seen    bool // choice 0 came
	content []byte
	calls   []callParts
	byIndex map[int]int // a tool call's index in the stream → in calls
}

// callParts is a tool call as far as it has come.
type callParts struct {
	id, name string
	args     []byte
}

// add takes one event's data, and says whether it ended the stream.
func (a *accumulator) add(data []byte, onText func(string)) (bool, error) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return true, nil
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return false, fmt.Errorf("chat completions: a malformed event in the response stream: %w", err)
	}
	if e := (&APIError{InStream: true}); e.setDetail(c.Error) {
		return false, e
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		a.seen = true
		if text := ch.Delta.Content; text != "" {
			a.content = append(a.content, text...)
			onText(text)
		}
		for _, d := range ch.Delta.ToolCalls {
			i, ok := a.byIndex[d.Index]
			if !ok {
				if a.byIndex == nil {
					a.byIndex = map[int]int{}
				}
				i = len(a.calls)
				a.byIndex[d.Index] = i
				a.calls = append(a.calls, callParts{})
			}
			p := &a.calls[i]
			if d.ID != "" {
				p.id = d.ID
			}
			p.name += d.Function.Name
			p.args = append(p.args, d.Function.Arguments...)
		}
	}
	return false, nil
}

// message is the assistant's message, or errNoChoices if choice 0 never
// came.
func (a *accumulator) message() (Message, error) {
	if !a.seen {
		return Message{}, errNoChoices
	}
	m := Message{Role: RoleAssistant, Content: string(a.content)}
	for _, p := range a.calls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: p.id, Type: "function",
			Function: FunctionCall{Name: p.name, Arguments: string(p.args)}})
	}
	return m, nil
}
