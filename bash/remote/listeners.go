package remote

import (
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

// flush returns once every task added so far was handed to the listeners.
func (ls *listeners) flush() { ls.queue.flush() }

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
