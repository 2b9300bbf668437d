package local

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/dshgo/dsh/bash"
)

// waitNews decides when a task's OnTaskWaiting listeners hear that it
// waits for input: once each time it starts waiting (from one write to
// the next), unless the answer to a write, or a read of its output,
// showed it waiting first.
type waitNews struct {
	mu    sync.Mutex
	calls int           // WriteInputs in flight: their answers will show it
	shown bool          // since the last write, a read showed it waiting
	told  bool          // since the last write, the listeners heard of it
	wrote chan struct{} // closed, and replaced, at each write
}

func newWaitNews() *waitNews { return &waitNews{wrote: make(chan struct{})} }

// begin marks a WriteInput in flight, until the returned function is
// called; a write of data (or EOF) starts a new time of waiting.
func (n *waitNews) begin(writes bool) (end func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls++
	if writes {
		n.shown, n.told = false, false
		close(n.wrote)
		n.wrote = make(chan struct{})
	}
	return func() {
		n.mu.Lock()
		n.calls--
		n.mu.Unlock()
	}
}

// show records that a read showed the task waiting.
func (n *waitNews) show() {
	n.mu.Lock()
	n.shown = true
	n.mu.Unlock()
}

// tellable reports whether the listeners could hear now that the task
// waits: no WriteInput is in flight, and nothing was shown or told since
// the last write.
func (n *waitNews) tellable() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls == 0 && !n.shown && !n.told
}

// tell reports whether the listeners are to hear that the task waits
// now, and if so records that they did.
func (n *waitNews) tell() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.calls > 0 || n.shown || n.told {
		return false
	}
	n.told = true
	return true
}

// written returns a channel closed at the next write.
func (n *waitNews) written() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.wrote
}

// maxWatchGap bounds the time between two readings of a quiet task that
// does not wait for input, so that one that starts waiting without a
// word is heard of within it.
const maxWatchGap = time.Second

// OnTaskWaiting registers fn to be called each time a running task with
// its input open starts waiting for input (see bash.Task.WaitingInput)
// without a WriteInput or ReadOutput having shown it so first; fn gets
// the task's snapshot. It is called from a goroutine of the executor's
// and must return promptly; never once Close has begun. The returned
// function unsubscribes it.
func (e *Executor) OnTaskWaiting(fn func(bash.Task)) (unsubscribe func()) {
	return e.subscribe(e.waitListeners, fn)
}

// watchWaiting runs beside a task whose input is open, until it ends: it
// reads the task's state once its output has been quiet a moment, then
// less and less often while nothing happens, and tells the listeners
// when it starts waiting for input.
func (e *Executor) watchWaiting(t *task) {
	defer e.wg.Done()
	p := t.p
	gap := bash.DefaultInputQuiet // the output's quiet before a reading
	timer := time.NewTimer(gap)
	defer timer.Stop()
	for {
		changed, wrote := p.outputChanged(), p.news.written()
		select {
		case <-timer.C:
			if !e.checkWaiting(t) {
				return // the kernel does not say, here
			}
			gap = min(2*gap, maxWatchGap)
			timer.Reset(gap)
			continue
		case <-changed[0]:
		case <-changed[1]:
		case <-wrote:
		case <-p.done:
			return
		case <-e.closing:
			return
		}
		gap = bash.DefaultInputQuiet
		timer.Reset(gap)
	}
}

// checkWaiting reads the task's state, and tells the listeners if it
// waits for input and they are to hear it; false when the state cannot
// be read.
func (e *Executor) checkWaiting(t *task) bool {
	p := t.p
	if !p.news.tellable() {
		return true // a call's answer, or a read, says it: no reading is owed
	}
	r := p.probe(maxTimerHorizon)
	if r.state == inputUnknown {
		return p.probes() // a passing crowd of threads; or never again
	}
	if r.state != inputWaiting || !p.drained() || !p.news.tell() {
		return true
	}
	e.mu.Lock()
	snap := t.snapshot()
	if snap.Status != bash.StatusRunning {
		e.mu.Unlock()
		return false // it ended meanwhile: its end is the news
	}
	var call []func(bash.Task)
	if !e.closed {
		for _, id := range slices.Sorted(maps.Keys(e.waitListeners)) {
			call = append(call, e.waitListeners[id])
		}
	}
	e.mu.Unlock()
	snap.WaitingInput = true
	for _, fn := range call {
		callListener(fn, snap)
	}
	return true
}
