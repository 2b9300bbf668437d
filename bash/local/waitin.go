package local

import (
	"context"
	"time"
)

// fileID names an open file as the kernel does: its device and inode.
type fileID struct{ dev, ino uint64 }

// inputState is what the kernel says of a task's processes.
type inputState int8

const (
	// inputUnknown: the state cannot be read here (no /proc, or no access
	// to the processes' system calls).
	inputUnknown inputState = iota
	// inputRunning: a thread runs, or waits on the disk.
	inputRunning
	// inputIdle: every thread sleeps, none reading the input (a timer, a
	// child, the network).
	inputIdle
	// inputWaiting: every thread sleeps, and one is blocked reading the
	// input: the program waits for what is typed next.
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

// probes reports whether the executor reads the kernel's state of this
// task to know when it waits for input.
func (p *proc) probes() bool { return p.input.id != (fileID{}) && !p.noProbe }

// probe reads the kernel's state of the task's processes now.
func (p *proc) probe() probeResult {
	if !p.probes() {
		return probeResult{state: inputUnknown}
	}
	return probeTask(p.taskPids(), p.input.id)
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
	return p.probes() && p.probe().state == inputWaiting && p.drained()
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

// maxProbeGap bounds the time between two readings of a running task's
// state while an answer is awaited.
const maxProbeGap = 16 * time.Millisecond

// awaitAnswer waits, after a write, until the task waits for input again
// (a reader that has run since the write, every thread asleep) with its
// output read and quiet for w.quiet; on a terminal, whose output reaches
// its controlling side a moment after the program wrote it, that must
// hold at two readings w.quiet apart. Where the kernel does not say, or
// the task sleeps without reading its input, it falls back to
// awaitQuiet's rule: some answer, then w.settle of quiet. It gives up at
// w.deadline, at the task's end, or when ctx is done.
func (p *proc) awaitAnswer(ctx context.Context, changed [2]<-chan struct{}, w answerWait) {
	if !w.probe {
		p.awaitQuiet(ctx, changed, w.settle, w.deadline, w.answerAt)
		return
	}
	end := time.NewTimer(time.Until(w.deadline))
	defer end.Stop()
	tick := time.NewTimer(min(time.Millisecond, w.quiet))
	defer tick.Stop()
	lastOut, gap, seen := time.Now(), w.quiet, false
	for {
		select {
		case <-changed[0]:
		case <-changed[1]:
		case <-tick.C:
			r := p.probe()
			if r.state == inputUnknown {
				p.awaitQuiet(ctx, changed, w.settle, w.deadline, w.answerAt)
				return
			}
			if p.waitsAgain(r, w) {
				if seen || !p.input.term {
					return
				}
				seen = true
				tick.Reset(w.quiet)
				continue
			}
			if r.state == inputIdle && p.outputLen() > w.answerAt {
				if left := w.settle - time.Since(lastOut); left <= 0 {
					return // asleep, not on its input: the fallback's quiet
				} else {
					gap = min(gap, left)
				}
			}
			seen = false
			tick.Reset(gap)
			gap = min(2*gap, maxProbeGap)
			continue
		case <-end.C:
			return
		case <-p.done:
			return
		case <-ctx.Done():
			return
		}
		changed = p.outputChanged()
		lastOut, gap, seen = time.Now(), w.quiet, false
		tick.Reset(w.quiet)
	}
}

// waitsAgain reports whether r shows the task waiting for input after
// the write w describes, with nothing it printed left unread.
func (p *proc) waitsAgain(r probeResult, w answerWait) bool {
	return r.state == inputWaiting && (w.anyReader || r.wokeSince(w.before)) && p.drained()
}
