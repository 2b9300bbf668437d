package local

import (
	"context"
	"sync/atomic"
	"time"
)

// fileID names an open file as the kernel does: its device and inode,
// and the id of the mount it was opened on.
type fileID struct{ dev, ino, mnt uint64 }

// inputState is what the kernel says of a task's processes.
type inputState int8

const (
	// inputUnknown: the state cannot be read here (no /proc, no access to
	// the processes' system calls, more of them than a probe reads).
	inputUnknown inputState = iota
	// inputRunning: a thread runs, or waits on the disk.
	inputRunning
	// inputIdle: every thread sleeps, none reading the input, or one
	// until a time soon (a timer, a child, the network).
	inputIdle
	// inputWaiting: every thread sleeps, with no end soon, and one is
	// blocked reading the input: the program waits for what is typed.
	inputWaiting
)

// reader is a thread seen blocked reading a task's input, with how many
// times it had been run by then.
type reader struct {
	tid  int
	runs uint64
}

// probeResult is one reading of a task's processes.
type probeResult struct {
	state   inputState
	readers []reader // inputWaiting: the threads that read the input
}

// maxProbeTime bounds the wait for one probe. Reading a process's memory
// can wait on its filesystem (a page of a file a FUSE server does not
// answer for): a probe that takes longer is left behind, and until it
// returns the task's state is unknown.
const maxProbeTime = 500 * time.Millisecond

// probes reports whether the executor reads the kernel's state of this
// task to know when it waits for input.
func (p *proc) probes() bool { return p.input.id != (fileID{}) && !p.noProbe }

// probe reads the kernel's state of the task's processes now; a sleep
// that ends within horizon is the program's own wait, not one for input.
func (p *proc) probe(horizon time.Duration) probeResult {
	if !p.probes() || p.probesLeft.Load() > 0 {
		return probeResult{state: inputUnknown}
	}
	got := make(chan probeResult, 1)
	var over atomic.Bool // set by the first of the probe's end and the wait's
	go func() {
		got <- probeTask(p.taskPids(), p.input.id, horizon)
		if !over.CompareAndSwap(false, true) {
			p.probesLeft.Add(-1) // given up on, and back
		}
	}()
	t := time.NewTimer(maxProbeTime)
	defer t.Stop()
	select {
	case r := <-got:
		return r
	case <-t.C:
		if !over.CompareAndSwap(false, true) {
			return <-got // it ended as the wait did
		}
		p.probesLeft.Add(1)
		return probeResult{state: inputUnknown}
	}
}

// taskPids lists the task's processes: its cgroup's, or the shell and
// every process below it.
func (p *proc) taskPids() []int {
	if l, ok := p.grp.(interface{ pids() ([]int, error) }); ok {
		if pids, err := l.pids(); err == nil {
			return pids
		}
	}
	return descendants(p.shell.Pid())
}

// drained reports whether everything the task printed so far is in its
// streams: the kernel holds none of it (FIONREAD), then each stream's
// reader has appended all it read.
func (p *proc) drained() bool {
	if pendingBytes(p.pipes[0]) > 0 || pendingBytes(p.pipes[1]) > 0 {
		return false
	}
	return p.out.sync(p.pipes[0]) && p.errs.sync(p.pipes[1])
}

// waitingNow reports whether the task waits for input now, all its
// output read into its streams: the state a snapshot shows.
func (p *proc) waitingNow() bool {
	return p.probes() && p.probe(maxTimerHorizon).state == inputWaiting && p.drained()
}

// wokeSince reports whether r holds a reader that has run since before
// (the readers seen before the write): a thread that read what was
// written and is blocked again, not one still asleep over bytes it has
// not been woken for.
func (r probeResult) wokeSince(before []reader) bool {
	for _, now := range r.readers {
		woke := true
		for _, b := range before {
			if b.tid == now.tid && b.runs == now.runs {
				woke = false
			}
		}
		if woke {
			return true
		}
	}
	return false
}

// maxTimerHorizon is how soon a timer of the task's must be due for the
// task to wait for it rather than for input: a REPL waiting on its input
// and on a timer due in a moment (an await of a short delay) will print
// when it fires; one whose event loop holds a timer due in seconds (node
// keeps one) waits for input.
const maxTimerHorizon = time.Second

// timerHorizon is the horizon of a probe for a wait until deadline.
func timerHorizon(deadline time.Time) time.Duration {
	return min(time.Until(deadline), maxTimerHorizon)
}

// maxProbeGap bounds the time between two readings of a running task's
// state while an answer is awaited.
const maxProbeGap = 16 * time.Millisecond

// answer is the state of one wait for an answer.
type answer struct {
	w       answerWait
	lastOut time.Time     // the last output, or the write
	gap     time.Duration // until the next reading of a task that is not waiting
	seen    bool          // on a terminal: seen waiting once, to be confirmed
}

// awaitAnswer waits, after a write, until the task waits for input again
// (a reader that has run since the write, every thread asleep) with its
// output read and quiet for w.quiet; on a terminal, whose output reaches
// its controlling side a moment after the program wrote it, that must
// hold at two readings w.quiet apart. It reports whether it saw that.
// Where the kernel does not say, or the task sleeps without reading its
// input, it falls back to awaitQuiet's rule: some answer, then w.settle
// of quiet. It gives up at w.deadline, at the task's end, or when ctx is
// done.
func (p *proc) awaitAnswer(ctx context.Context, changed [2]<-chan struct{}, w answerWait) bool {
	if !w.probe {
		p.awaitQuiet(ctx, changed, w.settle, w.deadline, w.answerAt)
		return false
	}
	end := time.NewTimer(time.Until(w.deadline))
	defer end.Stop()
	tick := time.NewTimer(min(time.Millisecond, w.quiet))
	defer tick.Stop()
	a := &answer{w: w, lastOut: time.Now(), gap: w.quiet}
	for {
		select {
		case <-changed[0]:
		case <-changed[1]:
		case <-tick.C:
			next, done, waiting := p.reading(a)
			if done {
				if !waiting && next < 0 { // the kernel does not say
					p.awaitQuiet(ctx, p.outputChanged(), w.settle, w.deadline, w.answerAt)
				}
				return waiting
			}
			tick.Reset(next)
			continue
		case <-end.C:
			return false
		case <-p.done:
			return false
		case <-ctx.Done():
			return false
		}
		changed = p.outputChanged()
		a.lastOut, a.gap, a.seen = time.Now(), w.quiet, false
		tick.Reset(w.quiet)
	}
}

// reading reads the task's state for awaitAnswer: done when the answer
// is complete (waiting: the task waits for input again), or when the
// kernel does not say (next negative); else when to read again.
func (p *proc) reading(a *answer) (next time.Duration, done, waiting bool) {
	r := p.probe(timerHorizon(a.w.deadline))
	switch {
	case r.state == inputUnknown && !p.probes():
		return -1, true, false
	case r.state == inputUnknown:
		r.state = inputIdle // for now: a crowd of threads, a slow probe
	case !p.closesPipe(a.w) && p.waitsAgain(r, a.w):
		if a.seen || !p.input.term {
			return 0, true, true
		}
		a.seen = true
		return a.w.quiet, false, false
	}
	a.seen = false
	next = a.gap
	a.gap = min(2*a.gap, maxProbeGap)
	if r.state == inputIdle && !a.w.eof && p.outputLen() > a.w.answerAt {
		left := a.w.settle - time.Since(a.lastOut)
		if left <= 0 {
			return 0, true, false // asleep, not on its input: the fallback's quiet
		}
		next = min(next, left)
	}
	return next, false, false
}

// closesPipe reports whether the write w describes ends an input that
// is a pipe. A reader seen after it is no wait for input: its read ends
// at the end of input, which it has yet to see while a command started
// meanwhile, between its fork and its exec, holds a copy of the pipe's
// end. (Into a terminal the end is a Ctrl-D, after which the program may
// read again.)
func (p *proc) closesPipe(w answerWait) bool { return w.eof && !p.input.term }

// waitsAgain reports whether r shows the task waiting for input after
// the write w describes, with nothing it printed left unread, and the
// terminal's echo of what was written shown (w.answerAt counts it).
func (p *proc) waitsAgain(r probeResult, w answerWait) bool {
	return r.state == inputWaiting && (w.anyReader || r.wokeSince(w.before)) &&
		p.drained() && p.outputLen() >= w.answerAt
}
