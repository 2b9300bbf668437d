package remote

import (
	"sync"

	"github.com/dshgo/dsh/bash"
)

// noticeQueue hands tasks to fn, in order, from a goroutine of its own, so
// that whoever adds one (an executor's OnTaskDone listener, a connection's
// reading goroutine) never waits for fn. It holds one entry per ended task
// not yet handed over, which the executors' task limits bound.
type noticeQueue struct {
	fn func(bash.Task)

	mu     sync.Mutex
	cond   *sync.Cond // signalled when handed grows or the queue closes
	queue  []bash.Task
	added  uint64
	handed uint64
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newNoticeQueue(fn func(bash.Task)) *noticeQueue {
	q := &noticeQueue{fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
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

// flush returns once every task added before it was handed to fn (or the
// queue closed).
func (q *noticeQueue) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for target := q.added; q.handed < target && !q.closed; {
		q.cond.Wait()
	}
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
			q.cond.Broadcast()
			q.mu.Unlock()
		}
	}
}

// close drops what is queued and returns once fn is no longer running.
func (q *noticeQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.queue = nil
	q.cond.Broadcast()
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}
