package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// pool keeps the warm jails of Options.Warm: started, their agents idle,
// nothing of any session's in them (see claim_linux.go) until a session
// takes one. A jail taken serves that session alone and ends with it, as
// a jail started for it would; the pool starts another in the
// background, waiting longer after each failure (up to a minute, saying
// why through Options.Logf), and replaces a jail that ends while idle.
type pool struct {
	js     *jails
	n      int
	once   bool          // Options.warmOnce: n starts, no more
	delay  time.Duration // Options.WarmRefillDelay, as a duration (≤ 0: none)
	logf   func(format string, args ...any)
	ctx    context.Context // ends at close: the starts under way are cut short
	cancel context.CancelFunc
	wg     sync.WaitGroup // the starts, the watchers, the discards

	tmpl atomic.Pointer[poolTemplate] // the sessions', as the last one found it

	mu       sync.Mutex
	idle     []*jail // oldest first
	making   int
	started  int         // starts begun, for once
	failures int         // in a row: the next try waits longer
	retry    *time.Timer // the wait after a failure
	refill   *time.Timer // the wait after a claim
	closed   bool
}

// newPool makes a pool of o.Warm jails for sessions of t, and starts
// filling it.
func newPool(js *jails, o *Options, t poolTemplate, logf func(string, ...any)) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	delay := o.WarmRefillDelay
	if delay == 0 {
		delay = DefaultWarmRefillDelay
	}
	p := &pool{js: js, n: o.Warm, once: o.warmOnce, delay: delay, logf: logf, ctx: ctx, cancel: cancel}
	p.tmpl.Store(&t)
	p.fill()
	return p
}

// fill starts jails until n are idle or starting.
func (p *pool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && p.retry == nil && p.refill == nil && len(p.idle)+p.making < p.n && !(p.once && p.started == p.n) {
		p.making++
		p.started++
		p.wg.Add(1)
		go p.make()
	}
}

// make starts one jail for the pool. After a failure the pool waits
// before the next try, twice as long each time up to a minute.
func (p *pool) make() {
	defer p.wg.Done()
	start := time.Now()
	j, err := p.js.startIdle(p.ctx, *p.tmpl.Load())
	defer func() {
		if p.ctx.Err() == nil { // told once the jail is idle, or the pool waits
			p.js.emitStart("", false, start, err)
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.making--
	switch {
	case err != nil && p.closed:
	case err != nil:
		p.failures++
		wait := min(time.Second<<min(p.failures-1, 6), time.Minute)
		p.logf("a warm sandbox did not start (next try in %v): %v", wait, err)
		if p.retry == nil {
			p.retry = time.AfterFunc(wait, p.retried)
		}
	case p.closed:
		p.discard(j)
	default:
		p.failures = 0
		p.idle = append(p.idle, j)
		p.wg.Add(1)
		go p.watch(j)
	}
}

// refillLater has the pool refill once no jail was taken for delay: a
// burst of new sessions does not compete with the refill for the CPU.
// Under mu.
func (p *pool) refillLater() {
	switch {
	case p.closed:
	case p.delay <= 0:
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.fill()
		}()
	case p.refill == nil:
		p.refill = time.AfterFunc(p.delay, p.refilled)
	default:
		p.refill.Reset(p.delay)
	}
}

// refilled is the end of the wait after a claim.
func (p *pool) refilled() {
	p.mu.Lock()
	p.refill = nil
	p.mu.Unlock()
	p.fill()
}

// retried is the end of the wait after a failure.
func (p *pool) retried() {
	p.mu.Lock()
	p.retry = nil
	p.mu.Unlock()
	p.fill()
}

// watch replaces j if it ends while idle (its agent or bwrap killed).
func (p *pool) watch(j *jail) {
	defer p.wg.Done()
	select {
	case <-j.gone:
	case <-j.claimed:
		return
	case <-p.ctx.Done():
		return
	}
	p.mu.Lock()
	was := len(p.idle)
	p.idle = deleteJail(p.idle, j)
	if len(p.idle) < was {
		p.logf("a warm sandbox ended while idle (another starts): %v", j.goneErr())
		p.discard(j)
	}
	p.mu.Unlock()
	p.fill()
}

// take takes an idle jail started for sessions of t, or returns nil when
// there is none; idle jails started for another template (the host
// changed since: a hidden path appeared, the deny rules changed) or gone
// are discarded. Sessions of t are what the pool starts jails for from
// now on, once no jail was taken for its delay (refillLater).
func (p *pool) take(t poolTemplate) *jail {
	p.tmpl.Store(&t)
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.refillLater()
	var got *jail
	keep := p.idle[:0]
	for _, j := range p.idle {
		switch {
		case j.sig != t.sig || isClosed(j.gone):
			p.discard(j)
		case got == nil:
			got = j
		default:
			keep = append(keep, j)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	return got
}

// putBack returns a jail take took but no session claimed.
func (p *pool) putBack(j *jail) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.discard(j)
		return
	}
	p.idle = append(p.idle, j)
}

// discard closes j in the background. Under mu.
func (p *pool) discard(j *jail) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = j.close()
	}()
}

// status is how many jails are idle, and how many the pool keeps.
func (p *pool) status() (ready, target int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range p.idle {
		if !isClosed(j.gone) {
			ready++
		}
	}
	return ready, p.n
}

// close stops filling, closes the idle jails and those being started,
// and waits for them.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	for _, t := range []**time.Timer{&p.retry, &p.refill} {
		if *t != nil {
			(*t).Stop()
			*t = nil
		}
	}
	for _, j := range p.idle {
		p.discard(j)
	}
	p.idle = nil
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// deleteJail is jails without j.
func deleteJail(jails []*jail, j *jail) []*jail {
	for i, k := range jails {
		if k == j {
			return append(jails[:i], jails[i+1:]...)
		}
	}
	return jails
}
