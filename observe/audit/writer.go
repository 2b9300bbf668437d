package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"time"

	"github.com/dshgo/dsh/observe"
)

// writer is the state of the log's goroutine, which alone writes the file.
type writer struct {
	buf      bytes.Buffer
	failing  bool  // the last write failed
	lost     int64 // events lost to failed writes, not yet in the log
	partial  bool  // a failed write left part of a line in the file
	behind   bool  // events were dropped for a full queue: reported
	sinceTop int   // events written since that report
	unknown  bool  // an event of an unknown type was reported
	closeErr error // the file's Close error, for Log.Close
}

// run writes the queued events until Close closes the queue.
func (l *Log) run() {
	defer close(l.done)
	for {
		select {
		case q, ok := <-l.queue:
			if !ok {
				l.finish()
				return
			}
			if l.abandon.Load() {
				l.dropped.Add(1)
				continue
			}
			l.takeReopened(q.seq)
			l.write(q.ev)
			l.reportFull(false)
		case <-l.wake:
			if len(l.queue) == 0 {
				l.takeReopened(math.MaxUint64)
			}
		}
	}
}

// finish writes what the drops were and closes the file (and any file
// Reopen opened that no event needed).
func (l *Log) finish() {
	if !l.abandon.Load() {
		l.takeReopened(math.MaxUint64)
		if l.w.lost > 0 {
			l.flushLost()
		}
		l.reportFull(true)
	}
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if err := l.file.Close(); err != nil && !errors.Is(err, fs.ErrClosed) {
		l.w.closeErr = err
	}
	l.mu.Lock()
	for _, p := range l.pending {
		p.f.Close()
	}
	l.pending = nil
	l.mu.Unlock()
}

// takeReopened moves to the file Reopen opened once the events recorded
// before it (up to its after'th) are written: seq is the next event's.
func (l *Log) takeReopened(seq uint64) {
	l.mu.Lock()
	var next *reopened
	for len(l.pending) > 0 && seq > l.pending[0].after {
		if next != nil {
			next.f.Close() // reopened twice before an event came
		}
		next = &l.pending[0]
		l.pending = l.pending[1:]
	}
	l.mu.Unlock()
	if next == nil {
		return
	}
	l.fileMu.Lock()
	old := l.file
	l.file = next.f
	l.fileMu.Unlock()
	old.Close()
	l.w.partial = false
}

// write writes an event's line, after the count of the lines lost before
// it if any were.
func (l *Log) write(e observe.Event) {
	v := line(e)
	if v == nil {
		l.dropped.Add(1)
		if !l.w.unknown {
			l.w.unknown = true
			l.errorf("audit log %s: events of type %T are not recorded (this build does not know them)", l.path, e)
		}
		return
	}
	if l.w.lost > 0 && !l.flushLost() {
		l.lose()
		return
	}
	if !l.put(v) {
		l.lose()
	}
}

// lose counts an event a failed write lost.
func (l *Log) lose() {
	l.dropped.Add(1)
	l.w.lost++
}

// flushLost writes the count of the events lost to failed writes: it
// reports whether it could, and that writing works again.
func (l *Log) flushLost() bool {
	n := l.w.lost
	if !l.put(&droppedLine{head: headOf(time.Time{}, "audit_dropped", ""), Dropped: n, Reason: reasonWriteFailed}) {
		return false
	}
	l.w.lost = 0
	l.errorf("audit log %s: writing again; %d events were lost", l.path, n)
	return true
}

// reportFull reports events dropped for a full queue: on stderr as soon as
// the writer sees them, and in the log once it caught up (the queue is
// empty, or it wrote what was queued when they were dropped), or at the
// end (force).
func (l *Log) reportFull(force bool) {
	if l.full.Load() == 0 {
		return
	}
	if !l.w.behind {
		l.w.behind, l.w.sinceTop = true, 0
		l.errorf("audit log %s: the writer is behind; events are dropped until it catches up", l.path)
	}
	l.w.sinceTop++
	if !force && len(l.queue) > 0 && l.w.sinceTop < cap(l.queue) {
		return
	}
	n := l.full.Swap(0)
	if !l.put(&droppedLine{head: headOf(time.Time{}, "audit_dropped", ""), Dropped: n, Reason: reasonQueueFull}) {
		l.full.Add(n) // for the next time
		return
	}
	l.w.behind = false
	l.errorf("audit log %s: the writer caught up; %d events were dropped", l.path, n)
}

// put writes one line: it reports whether it could. The first failure of
// a streak is reported.
func (l *Log) put(v any) bool {
	b := &l.w.buf
	b.Reset()
	if l.w.partial {
		b.WriteByte('\n') // end the part of a line a failed write left
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		l.errorf("audit log %s: %v", l.path, err) // a bug: the lines are plain data
		return false
	}
	n, err := l.file.Write(b.Bytes())
	if err == nil {
		l.w.failing, l.w.partial = false, false
		return true
	}
	l.w.partial = l.w.partial && n == 0 || n > 0 && n < b.Len()
	if !l.w.failing {
		l.w.failing = true
		l.errorf("audit log %s: cannot write: %v; events are lost until it can be written again", l.path, unwrapPath(err))
	}
	return false
}

// unwrapPath is the reason of a *fs.PathError, which names the path again.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
