package toolbash

import (
	"slices"
	"strings"
	"sync"

	"github.com/dshgo/dsh/bash"
)

// maxPendingNotices bounds the notices waiting for one session; past it
// the oldest are dropped (each task's output stays readable).
const maxPendingNotices = 64

// maxSeenEnds bounds the memory of tasks whose end their owner has read.
// It only has to outlast the moment between a read that sees a task's end
// and the executor telling its listeners, so a few hundred is plenty.
const maxSeenEnds = 256

// noticeBox holds the completion notices waiting for each session, and
// keeps them from being redundant: a notice is dropped once its session
// has read the task's final status (bash_output) or killed it (bash_kill),
// whichever comes first, the read or the notice.
type noticeBox struct {
	mu      sync.Mutex
	pending map[string][]pendingNotice // by session ID, oldest first
	seen    map[bash.TaskID]bool       // ends read before their notice came
	order   []bash.TaskID              // seen, oldest first
	ended   map[bash.TaskID]bool       // tasks whose end was told or read
	endList []bash.TaskID              // ended, oldest first
}

type pendingNotice struct {
	task    bash.TaskID
	text    string
	waiting bool // the task waits for input; it has not ended
}

// add queues the notice of an ended task for its owner and returns its
// text, unless the owner has already seen the end.
func (b *noticeBox) add(t bash.Task) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endedNow(t.ID)
	if b.seen[t.ID] {
		delete(b.seen, t.ID)
		return "", false
	}
	text := noticeText(t)
	b.queue(t.Owner, pendingNotice{task: t.ID, text: text}) // what it waited for is moot
	return text, true
}

// queue adds n for owner, in place of a notice that the same task waits
// for input.
func (b *noticeBox) queue(owner string, n pendingNotice) {
	if b.pending == nil {
		b.pending = map[string][]pendingNotice{}
	}
	q := slices.DeleteFunc(b.pending[owner], func(p pendingNotice) bool { return p.task == n.task && p.waiting })
	q = append(q, n)
	if len(q) > maxPendingNotices {
		q = q[len(q)-maxPendingNotices:]
	}
	b.pending[owner] = q
}

// addWaiting queues the notice of a task that started waiting for input
// and returns its text, unless its end was told or read already (the
// news that it waited can come after it).
func (b *noticeBox) addWaiting(t bash.Task) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended[t.ID] {
		return "", false
	}
	text := waitingNoticeText(t)
	b.queue(t.Owner, pendingNotice{task: t.ID, text: text, waiting: true})
	return text, true
}

// endedNow remembers that a task ended, for addWaiting; b.mu is held.
func (b *noticeBox) endedNow(id bash.TaskID) {
	if b.ended == nil {
		b.ended = map[bash.TaskID]bool{}
	}
	if !b.ended[id] {
		b.ended[id] = true
		b.endList = append(b.endList, id)
	}
	for len(b.endList) > maxSeenEnds {
		delete(b.ended, b.endList[0])
		b.endList = b.endList[1:]
	}
}

// seenRunning records that the owner read the task's state while it
// runs: a notice that it waits for input says nothing the read did not.
func (b *noticeBox) seenRunning(owner string, id bash.TaskID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.pending[owner]; q != nil {
		b.pending[owner] = slices.DeleteFunc(q, func(p pendingNotice) bool { return p.task == id && p.waiting })
	}
}

// seenEnd records that the owner has seen the task's end: its notice, if
// waiting, is dropped, and one that comes later never is queued.
func (b *noticeBox) seenEnd(owner string, id bash.TaskID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endedNow(id)
	told := false // its end's notice was waiting
	if q := b.pending[owner]; q != nil {
		b.pending[owner] = slices.DeleteFunc(q, func(n pendingNotice) bool {
			told = told || n.task == id && !n.waiting
			return n.task == id
		})
	}
	if told {
		return
	}
	if b.seen == nil {
		b.seen = map[bash.TaskID]bool{}
	}
	if !b.seen[id] {
		b.seen[id] = true
		b.order = append(b.order, id)
	}
	for len(b.order) > maxSeenEnds {
		delete(b.seen, b.order[0])
		b.order = b.order[1:]
	}
}

// take returns the session's waiting notices, oldest first, and forgets
// them.
func (b *noticeBox) take(owner string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.pending[owner]
	delete(b.pending, owner)
	out := make([]string, len(q))
	for i, n := range q {
		out[i] = n.text
	}
	return out
}

// takeWithin is take of the oldest notices whose NoticesText has at most
// room characters (negative: all); the others wait.
func (b *noticeBox) takeWithin(owner string, room int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.pending[owner]
	var out []string
	for _, n := range q {
		if room >= 0 && chars(NoticesText(append(out, n.text))) > room {
			break
		}
		out = append(out, n.text)
	}
	if len(out) == len(q) {
		delete(b.pending, owner)
	} else {
		b.pending[owner] = q[len(out):]
	}
	return out
}

// drop forgets a session's notices.
func (b *noticeBox) drop(owner string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, owner)
}

// NoticesText is how waiting completion notices reach the model: a heading,
// then one notice per line; "" for none.
func NoticesText(notices []string) string {
	if len(notices) == 0 {
		return ""
	}
	return "[background task notices; no reply needed]\n" + strings.Join(notices, "\n")
}

// NoticeBlock is NoticesText set apart for a content block of its own after
// a tool result's text: a client that joins a result's blocks without a
// separator (Codex does) still shows a blank line between the result and
// the notices.
func NoticeBlock(notices []string) string { return "\n\n" + NoticesText(notices) }
