package egress

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// asked is, by owner, what each session's user was asked and answered,
// and the questions waiting for it.
type asked struct {
	mu     sync.Mutex
	owners map[string]*askState
}

// askState is one session's questions: one put to its user at a time
// (by askLoop), the others waiting in a bounded line, all rated by a
// bucket of tokens; and what the user answered.
type askState struct {
	allowed  map[string]bool      // hosts allowed for the session (AllowSession)
	declined map[string]bool      // host:port declined (Deny)
	denyNew  bool                 // DenyAllNew: every host not yet allowed is refused
	pending  map[string]*question // by host:port: put to the user, or in line
	line     []*question          // waiting for their turn (not the one put), oldest first
	running  bool                 // askLoop runs
	cancel   context.CancelFunc   // ends the question put to the user
	ended    bool                 // EndOwner: ask nothing more
	tokens   int                  // questions that may be put without a wait
	counted  time.Time            // when tokens were last refilled
}

// question is one destination (host and port) put to the user, or
// waiting its turn, for which every connection to it waits.
type question struct {
	st      *askState // its session's
	q       Question
	key     string        // host:port
	waiters int           // connections waiting for the answer
	done    chan struct{} // closed once why is set
	why     Reason        // 0: allowed; else why not
}

// ask puts a destination no rule names to the session's user, once for
// every connection to it (host and port: the question names both) that
// waits at the time, and one question at a time: a connection to another
// destination waits its turn in a bounded line, or is refused unasked
// (TooManyQuestions) when the line is full or the session's questions
// are spent. It remembers for the session an allowance of the host
// ("Allow HOST for this session"), a denial of what was asked (the host
// and port), and a denial of every host not yet allowed. It returns 0
// where the connection may go ahead, else why not.
func (p *Proxy) ask(ctx context.Context, ref *Refusal) Reason {
	if p.front.Load().ask == nil {
		return Unlisted
	}
	q, why, event := p.enqueue(ref)
	if event != "" && p.event != nil {
		p.event(event)
	}
	if q == nil {
		return why
	}
	select {
	case <-q.done:
		ref.Asked = q.why != Unlisted // else nobody could be asked, or answered
		return q.why
	case <-ctx.Done():
		p.leave(q)
		return Unlisted
	}
}

// enqueue finds what the session remembers of the destination, the
// question about it (made if there is none and the session may ask one
// more), or why it is refused; and what to tell the tests' event hook.
func (p *Proxy) enqueue(ref *Refusal) (q *question, why Reason, event string) {
	p.asked.mu.Lock()
	defer p.asked.mu.Unlock()
	st := p.askStateOf(ref.Owner)
	if why, ok := st.remembered(ref.Host, ref.Port); ok {
		return nil, why, ""
	}
	key := net.JoinHostPort(ref.Host, strconv.Itoa(ref.Port))
	if q := st.pending[key]; q != nil {
		q.waiters++
		return q, 0, "waiting"
	}
	if st.running && len(st.line) >= p.askQueue || !st.take(p.now(), p.askBurst, p.askRefill) {
		return nil, TooManyQuestions, ""
	}
	q = &question{st: st, q: Question{Owner: ref.Owner, Host: ref.Host, Port: ref.Port}, key: key, waiters: 1, done: make(chan struct{})}
	st.pending[key] = q
	if st.running {
		st.line = append(st.line, q)
		return q, 0, "queued"
	}
	p.startAsking(st, q)
	return q, 0, ""
}

// askStateOf is the owner's askState, made if it has none yet.
func (p *Proxy) askStateOf(owner string) *askState {
	st := p.asked.owners[owner]
	if st == nil {
		st = &askState{allowed: map[string]bool{}, declined: map[string]bool{}, pending: map[string]*question{},
			tokens: p.askBurst, counted: p.now()}
		p.asked.owners[owner] = st
	}
	return st
}

// startAsking puts q to the session's user, on an askLoop of its own,
// unless the proxy is closed (then q is refused as Unlisted).
func (p *Proxy) startAsking(st *askState, q *question) {
	ctx, cancel := context.WithTimeout(p.ctx, p.askTimeout)
	if !p.goTracked(func() { p.askLoop(ctx, st, q) }) {
		cancel()
		st.settle(q, Unlisted)
		return
	}
	st.running, st.cancel = true, cancel
}

// goTracked runs f on a goroutine Close waits for, unless the proxy is
// closed.
func (p *Proxy) goTracked(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Go(f)
	return true
}

// errNoAsker: the front end stopped asking (SetFront) before a question
// in line was put; nobody answered it.
var errNoAsker = errors.New("egress: nobody asks the user")

// askLoop puts q to the session's user, with ctx, then the questions in
// line, one at a time, until none waits.
func (p *Proxy) askLoop(ctx context.Context, st *askState, q *question) {
	for q != nil {
		d, err := Deny, errNoAsker
		if ask := p.front.Load().ask; ask != nil {
			d, err = ask(ctx, q.q)
		}
		p.answered(st, q, d, err)
		q, ctx = p.nextQuestion(st)
	}
}

// nextQuestion takes the next question of the line to put to the user,
// settling those an answer since has decided (nil: none is left).
func (p *Proxy) nextQuestion(st *askState) (*question, context.Context) {
	p.asked.mu.Lock()
	defer p.asked.mu.Unlock()
	for len(st.line) > 0 {
		q := st.line[0]
		st.line = st.line[1:]
		if why, ok := st.remembered(q.q.Host, q.q.Port); ok {
			st.settle(q, why)
			continue
		}
		if p.ctx.Err() != nil { // closed
			st.settle(q, Unlisted)
			continue
		}
		ctx, cancel := context.WithTimeout(p.ctx, p.askTimeout)
		st.cancel = cancel
		return q, ctx
	}
	st.running = false
	return nil, nil
}

// answered settles q by the user's answer, and remembers it.
func (p *Proxy) answered(st *askState, q *question, d Decision, err error) {
	p.asked.mu.Lock()
	defer p.asked.mu.Unlock()
	st.cancel()
	st.cancel = nil
	st.settle(q, st.remember(q.q, d, err))
}

// remembered is what the session's answers say of host and port.
func (st *askState) remembered(host string, port int) (Reason, bool) {
	switch {
	case st.ended:
		return Unlisted, true
	case st.allowed[host]:
		return 0, true
	case st.declined[net.JoinHostPort(host, strconv.Itoa(port))]:
		return Declined, true
	case st.denyNew:
		return DeclinedAll, true
	}
	return 0, false
}

// remember keeps the user's answer to q for the session, and returns
// what it means for the connections waiting for it. An error (nobody
// answered) is not an answer: nothing is remembered.
func (st *askState) remember(q Question, d Decision, err error) Reason {
	switch {
	case err != nil:
		return Unlisted
	case d == AllowOnce:
		return 0
	case d == AllowSession:
		st.allowed[q.Host] = true
		return 0
	case d == DenyAllNew:
		st.denyNew = true
		return DeclinedAll
	}
	st.declined[net.JoinHostPort(q.Host, strconv.Itoa(q.Port))] = true
	return Declined
}

// settle ends q: every connection waiting for it goes on, or is refused
// for why.
func (st *askState) settle(q *question, why Reason) {
	q.why = why
	if st.pending[q.key] == q {
		delete(st.pending, q.key)
	}
	close(q.done)
}

// take takes a token for one more question, if one is left: the bucket
// holds burst at most, and gains one each refill.
func (st *askState) take(now time.Time, burst int, refill time.Duration) bool {
	if n := now.Sub(st.counted) / refill; n > 0 {
		st.tokens = int(min(int64(burst), int64(st.tokens)+int64(n)))
		st.counted = st.counted.Add(n * refill)
	}
	if st.tokens <= 0 {
		return false
	}
	st.tokens--
	return true
}

// leave is a connection that no longer waits for q: a question in line
// that none waits for any more is dropped unasked, and its token given
// back.
func (p *Proxy) leave(q *question) {
	p.asked.mu.Lock()
	defer p.asked.mu.Unlock()
	st := q.st
	if q.waiters--; q.waiters > 0 {
		return
	}
	if i := slices.Index(st.line, q); i >= 0 {
		st.line = slices.Delete(st.line, i, i+1)
		st.tokens = min(st.tokens+1, p.askBurst)
		st.settle(q, Unlisted)
	}
}

// EndOwner forgets what the owner's session was asked and answered, and
// ends its questions: the one put to its user (whose Ask's context ends)
// and those in line are refused as Unlisted.
func (p *Proxy) EndOwner(owner string) {
	p.asked.mu.Lock()
	defer p.asked.mu.Unlock()
	st := p.asked.owners[owner]
	if st == nil {
		return
	}
	delete(p.asked.owners, owner)
	st.ended = true
	if st.cancel != nil {
		st.cancel()
	}
	for _, q := range st.line {
		st.settle(q, Unlisted)
	}
	st.line = nil
}
