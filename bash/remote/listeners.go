package remote

import (
	"context"
	"slices"
	"sync"

	"github.com/dshgo/dsh/bash"
)

// listeners are the executor's OnTaskDone subscribers, called in order,
// one task at a time, from a queue of their own (never from the link's
// reading goroutine), and never once closed.
type listeners struct {
	mu     sync.Mutex
	next   int
	fns    map[int]func(bash.Task)
	order  []int
	closed bool
	queue  *noticeQueue
}

func newListeners() *listeners {
	ls := &listeners{fns: map[int]func(bash.Task){}}
	ls.queue = newNoticeQueue(ls.call)
	return ls
}

func (ls *listeners) subscribe(fn func(bash.Task)) func() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.next++
	id := ls.next
	ls.fns[id] = fn
	ls.order = append(ls.order, id)
	return func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		delete(ls.fns, id)
		ls.order = slices.DeleteFunc(ls.order, func(x int) bool { return x == id })
	}
}

func (ls *listeners) add(t bash.Task) { ls.queue.add(t) }

// flush returns once every task added so far was handed to the listeners,
// or ctx is done (a listener that calls Kill itself would wait for
// itself).
func (ls *listeners) flush(ctx context.Context) { ls.queue.flush(ctx) }

// call hands t to every listener; a panicking one does not stop the others.
func (ls *listeners) call(t bash.Task) {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return
	}
	var fns []func(bash.Task)
	for _, id := range ls.order {
		if fn, ok := ls.fns[id]; ok {
			fns = append(fns, fn)
		}
	}
	ls.mu.Unlock()
	for _, fn := range fns {
		ls.mu.Lock()
		closed := ls.closed
		ls.mu.Unlock()
		if closed {
			return // Close has begun: no listener starts now
		}
		callSafely(fn, t)
	}
}

func callSafely(fn func(bash.Task), t bash.Task) {
	defer func() { _ = recover() }() // a listener's panic is its own
	fn(t)
}

// close stops every call; once it returns no listener runs.
func (ls *listeners) close() {
	ls.mu.Lock()
	ls.closed = true
	ls.mu.Unlock()
	ls.queue.close()
}
