package remote

import (
	"context"
	"sync"

	"github.com/dshgo/dsh/bash"
)

// noticeQueue hands tasks to fn, in order, from a goroutine of its own, so
// that whoever adds one (an executor's OnTaskDone listener, a connection's
// reading goroutine) never waits for fn. It holds one entry per ended task
// not yet handed over, which the executors' task limits bound.
type noticeQueue struct {
	fn func(bash.Task)

	mu      sync.Mutex
	changed chan struct{} // closed, and replaced, when handed grows or the queue closes
	queue   []bash.Task
	added   uint64
	handed  uint64
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func newNoticeQueue(fn func(bash.Task)) *noticeQueue {
	q := &noticeQueue{fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{}), changed: make(chan struct{})}
	go q.loop()
	return q
}

func (q *noticeQueue) add(t bash.Task) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.queue = append(q.queue, t)
	q.added++
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// flush returns once every task added before it was handed to fn, the
// queue closed, or ctx is done.
func (q *noticeQueue) flush(ctx context.Context) {
	q.mu.Lock()
	target := q.added
	for q.handed < target && !q.closed {
		changed := q.changed
		q.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
		q.mu.Lock()
	}
	q.mu.Unlock()
}

// signal wakes the flushes; q.mu is held.
func (q *noticeQueue) signal() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *noticeQueue) loop() {
	defer close(q.done)
	for range q.wake {
		for {
			q.mu.Lock()
			if q.closed {
				q.mu.Unlock()
				return
			}
			if len(q.queue) == 0 {
				q.mu.Unlock()
				break
			}
			t := q.queue[0]
			q.queue = q.queue[1:]
			q.mu.Unlock()
			q.fn(t)
			q.mu.Lock()
			q.handed++
			q.signal()
			q.mu.Unlock()
		}
	}
}

// close drops what is queued and returns once fn is no longer running.
func (q *noticeQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.queue = nil
	q.signal()
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}
