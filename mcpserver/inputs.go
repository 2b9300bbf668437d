package mcpserver

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool call's questions on protocol 2026-07-28 (multi round-trip
// requests, SEP-2322) go back to the client as input requests in the
// call's result, with a request state; the client answers by calling
// again with the answers and that state. An answer counts only if it
// answers a question this server put for this very call: the state names
// a round of questions the server keeps for the session, once (a state is
// spent by the call that brings it), for the same tool and arguments, and
// each answer must answer a question of that round. Anything else (answers
// nobody asked for, a state that is unknown, spent or expired, another
// call's state) is refused, and nothing runs.

// inputRoundTTL is how long a round of questions waits for its answers.
const inputRoundTTL = time.Hour

// maxInputRounds bounds the rounds one session keeps waiting; past it the
// oldest is forgotten (its answers then count for nothing).
const maxInputRounds = 16

// inputRound is one round of questions put within a tool call.
type inputRound struct {
	tool    string
	args    string              // the call's arguments, canonical
	asked   mcp.InputRequestMap // this round's questions
	earlier callAnswers         // the call's earlier rounds: their answers, checked, and questions
	expires time.Time
}

// inputRounds are a session's rounds waiting for their answers.
type inputRounds struct {
	mu     sync.Mutex
	rounds map[string]*inputRound // by request state
	order  []string               // states, oldest first
}

// put keeps a round of questions and returns the request state that names
// it.
func (r *inputRounds) put(tool string, args json.RawMessage, asked mcp.InputRequestMap, earlier callAnswers) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	state := "dsh-" + hex.EncodeToString(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rounds == nil {
		r.rounds = map[string]*inputRound{}
	}
	for len(r.order) >= maxInputRounds {
		delete(r.rounds, r.order[0])
		r.order = r.order[1:]
	}
	r.rounds[state] = &inputRound{tool: tool, args: canonicalArgs(args), asked: asked, earlier: earlier,
		expires: time.Now().Add(inputRoundTTL)}
	r.order = append(r.order, state)
	return state
}

// take spends the round state names.
func (r *inputRounds) take(state string) *inputRound {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.rounds[state]
	delete(r.rounds, state)
	if i := slices.Index(r.order, state); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
	return q
}

// callAnswers are the answers a call brought, each checked to answer a
// question this server put for the call, with the questions they answer.
type callAnswers struct {
	responses mcp.InputResponseMap
	asked     mcp.InputRequestMap
}

// errUnasked: a call brought answers to questions this server did not put
// for it.
var errUnasked = errors.New("the answers sent with this call answer no question this server put for it")

// answersFor checks the answers a tool call brought against the round its
// request state names, and spends that round. A call with neither answers
// nor a state brings none.
func (r *inputRounds) answersFor(tool string, p *mcp.CallToolParamsRaw) (callAnswers, error) {
	if p.RequestState == "" && len(p.InputResponses) == 0 {
		return callAnswers{}, nil
	}
	round := r.take(p.RequestState)
	switch {
	case round == nil:
		return callAnswers{}, fmt.Errorf("%w (no round of questions is waiting under its request state)", errUnasked)
	case time.Now().After(round.expires):
		return callAnswers{}, fmt.Errorf("%w (its round of questions expired)", errUnasked)
	case round.tool != tool || round.args != canonicalArgs(p.Arguments):
		return callAnswers{}, fmt.Errorf("%w (the questions were about another call)", errUnasked)
	}
	got := callAnswers{responses: mcp.InputResponseMap{}, asked: mcp.InputRequestMap{}}
	for key, resp := range round.earlier.responses {
		// With the question it answered: an answer counts only for the
		// question the user saw (see elicit).
		got.responses[key] = resp
		got.asked[key] = round.earlier.asked[key]
	}
	for key, resp := range p.InputResponses {
		q, ok := round.asked[key]
		if !ok || !answers(q, resp) {
			return callAnswers{}, fmt.Errorf("%w (%q was not asked)", errUnasked, key)
		}
		got.responses[key] = resp
		got.asked[key] = q
	}
	return got, nil
}

// answers reports whether resp is the kind of answer q asks for.
func answers(q mcp.InputRequest, resp mcp.InputResponse) bool {
	switch q.(type) {
	case *mcp.ElicitParams:
		_, ok := resp.(*mcp.ElicitResult)
		return ok
	case *mcp.ListRootsParams:
		_, ok := resp.(*mcp.ListRootsResult)
		return ok
	}
	return false
}

// canonicalArgs is a call's arguments in one spelling (keys sorted, no
// space, numbers as written), to tell whether two calls are the same.
func canonicalArgs(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "invalid:" + string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "invalid:" + string(raw)
	}
	return string(b)
}

// unaskedText is what the model reads for a call that brought answers
// nobody asked for.
func unaskedText(err error) string {
	return strings.TrimSuffix(err.Error(), ".") + "; nothing ran. Call the tool again without them: the user is asked where a question is needed."
}
