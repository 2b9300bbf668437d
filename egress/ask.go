package egress

import (
	"context"
	"strconv"
	"strings"
	"sync"
)

// asked is what the sessions answered, and the questions in flight.
type asked struct {
	mu       sync.Mutex
	answers  map[string]Decision  // AllowSession by owner and host, Deny by owner, host and port
	inflight map[string]*question // by owner, host and port
}

// question is one question in flight, which every connection to its host
// and port from its session waits for.
type question struct {
	done chan struct{}
	d    Decision
	err  error
}

func askKey(owner, host string) string { return owner + "\x00" + host }

// ask puts a destination no rule names to the session's user, once for
// every connection to it (host and port: the question names both) that
// waits at the time, and remembers for the session an allowance of the
// host ("Allow HOST for this session") or a denial of what was asked,
// the host and port. It returns 0 where the connection may go ahead,
// else why not.
func (p *Proxy) ask(ctx context.Context, ref *Refusal) Reason {
	if p.opts.Ask == nil {
		return Unlisted
	}
	key := askKey(ref.Owner, ref.Host)
	qkey := key + "\x00" + strconv.Itoa(ref.Port)
	p.asked.mu.Lock()
	if d, ok := p.asked.answers[key]; ok {
		p.asked.mu.Unlock()
		return reasonOf(d, nil)
	}
	if d, ok := p.asked.answers[qkey]; ok {
		p.asked.mu.Unlock()
		return reasonOf(d, nil)
	}
	q := p.asked.inflight[qkey]
	if q == nil {
		q = &question{done: make(chan struct{})}
		p.asked.inflight[qkey] = q
		p.asked.mu.Unlock()
		actx, cancel := context.WithTimeout(ctx, p.askTimeout)
		q.d, q.err = p.opts.Ask(actx, Question{Owner: ref.Owner, Host: ref.Host, Port: ref.Port})
		cancel()
		p.asked.mu.Lock()
		delete(p.asked.inflight, qkey)
		switch {
		case q.err != nil, q.d == AllowOnce:
		case q.d == AllowSession:
			p.asked.answers[key] = q.d
		default:
			p.asked.answers[qkey] = q.d
		}
		p.asked.mu.Unlock()
		close(q.done)
		return reasonOf(q.d, q.err)
	}
	p.asked.mu.Unlock()
	if p.event != nil {
		p.event("waiting")
	}
	select {
	case <-q.done:
		return reasonOf(q.d, q.err)
	case <-ctx.Done():
		return Unlisted
	}
}

func reasonOf(d Decision, err error) Reason {
	switch {
	case err != nil:
		return Unlisted
	case d == AllowOnce || d == AllowSession:
		return 0
	}
	return Declined
}

// EndOwner forgets what the owner's session was asked and answered.
func (p *Proxy) EndOwner(owner string) {
	prefix := askKey(owner, "")
	p.asked.mu.Lock()
	defer p.asked.mu.Unlock()
	for k := range p.asked.answers {
		if strings.HasPrefix(k, prefix) {
			delete(p.asked.answers, k)
		}
	}
}
