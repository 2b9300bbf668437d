package toolbash

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
)

// What waits for a session besides its results: the notices of its
// background tasks (one ended; one waits for input) and of the network
// proxy's refusals of its commands' connections (EgressRefused). They wait
// in one queue per session and reach the model beside the session's next
// result (TakeNotices), within what that result leaves of its budget.

// maxPendingNotices bounds the task notices waiting for one session; past
// it the oldest are dropped (each task's output stays readable).
const maxPendingNotices = 64

// maxNetworkNotes bounds the destinations whose refusal waits for one
// session with a line of its own; past it, refusals are counted.
const maxNetworkNotes = 8

// maxSeenEnds bounds the memory of tasks whose end their owner has read.
// It only has to outlast the moment between a read that sees a task's end
// and the executor telling its listeners, so a few hundred is plenty.
const maxSeenEnds = 256

// noticeKind is what a notice tells.
type noticeKind int

const (
	taskEnded   noticeKind = iota + 1 // a background task ended
	taskWaiting                       // a background task waits for input; it has not ended
	netRefused                        // the network proxy refused a connection
)

// notice is one line that waits for a session.
type notice struct {
	kind noticeKind
	task bash.TaskID // taskEnded, taskWaiting: the task
	dest string      // netRefused: host:port ("" for one line whatever the destination)
	text string
}

// noticeQueue is what waits for one session, oldest first.
type noticeQueue struct {
	notices []notice
	more    map[string]bool // destinations refused past maxNetworkNotes
}

// noticeBox holds the notices waiting for each session, and keeps task
// notices from being redundant: one is dropped once its session has read
// the task's final status (bash_output) or killed it (bash_kill),
// whichever comes first, the read or the notice.
type noticeBox struct {
	mu      sync.Mutex
	pending map[string]*noticeQueue // by session ID
	seen    map[bash.TaskID]bool    // ends read before their notice came
	order   []bash.TaskID           // seen, oldest first
	ended   map[bash.TaskID]bool    // tasks whose end was told or read
	endList []bash.TaskID           // ended, oldest first
}

// queueOf is the owner's queue, made if it has none; b.mu is held.
func (b *noticeBox) queueOf(owner string) *noticeQueue {
	if b.pending == nil {
		b.pending = map[string]*noticeQueue{}
	}
	q := b.pending[owner]
	if q == nil {
		q = &noticeQueue{more: map[string]bool{}}
		b.pending[owner] = q
	}
	return q
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
	b.queueOf(t.Owner).addTask(notice{kind: taskEnded, task: t.ID, text: text}) // what it waited for is moot
	return text, true
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
	b.queueOf(t.Owner).addTask(notice{kind: taskWaiting, task: t.ID, text: text})
	return text, true
}

// addRefusal queues the refusal of a connection to dest, once per
// destination: a line of its own for the first maxNetworkNotes, a count
// for the rest.
func (b *noticeBox) addRefusal(owner, dest, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queueOf(owner)
	lines := 0
	for _, n := range q.notices {
		if n.kind != netRefused {
			continue
		}
		if n.dest == dest {
			return // one line per destination
		}
		lines++
	}
	if lines < maxNetworkNotes {
		q.notices = append(q.notices, notice{kind: netRefused, dest: dest, text: text})
		return
	}
	q.more[dest] = true
}

// addTask adds n, in place of a notice that the same task waits for
// input, dropping the oldest task notice past maxPendingNotices.
func (q *noticeQueue) addTask(n notice) {
	q.notices = slices.DeleteFunc(q.notices, func(p notice) bool { return p.kind == taskWaiting && p.task == n.task })
	q.notices = append(q.notices, n)
	tasks := 0
	for _, p := range q.notices {
		if p.kind != netRefused {
			tasks++
		}
	}
	if tasks > maxPendingNotices {
		i := slices.IndexFunc(q.notices, func(p notice) bool { return p.kind != netRefused })
		q.notices = slices.Delete(q.notices, i, i+1)
	}
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
		q.notices = slices.DeleteFunc(q.notices, func(n notice) bool { return n.kind == taskWaiting && n.task == id })
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
		q.notices = slices.DeleteFunc(q.notices, func(n notice) bool {
			told = told || n.kind == taskEnded && n.task == id
			return n.kind != netRefused && n.task == id
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

// take returns, and forgets, the texts of the owner's notices that fit
// in room characters (negative: any), each set apart from the one before
// by a blank line (two characters): its task notices (taskNoticesText), as
// many as fit whole, the others waiting; then its refusals
// (networkText), the lines that do not fit counted with the rest, or all
// waiting where not even one line fits.
func (b *noticeBox) take(owner string, room int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.pending[owner]
	if q == nil {
		return nil
	}
	var out []string
	if text := q.takeTasks(room); text != "" {
		out = append(out, text)
		if room >= 0 {
			room = max(room-chars(text)-2, 0)
		}
	}
	if text := q.takeRefusals(room); text != "" {
		out = append(out, text)
	}
	if len(q.notices) == 0 && len(q.more) == 0 {
		delete(b.pending, owner)
	}
	return out
}

// takeTasks takes the oldest task notices whose taskNoticesText has at most
// room characters (negative: all), and returns that text.
func (q *noticeQueue) takeTasks(room int) string {
	var lines []string
	var rest []notice
	full := false // a notice did not fit: the later ones wait too
	for _, n := range q.notices {
		full = full || n.kind != netRefused && room >= 0 && chars(taskNoticesText(append(lines, n.text))) > room
		if n.kind == netRefused || full {
			rest = append(rest, n)
			continue
		}
		lines = append(lines, n.text)
	}
	q.notices = rest
	return taskNoticesText(lines)
}

// takeRefusals takes every refusal as one networkText of at most room
// characters (negative: any), counting the lines that do not fit; where
// not even one fits, it takes none and returns "".
func (q *noticeQueue) takeRefusals(room int) string {
	var refused []notice
	for _, n := range q.notices {
		if n.kind == netRefused {
			refused = append(refused, n)
		}
	}
	var lines []string
	more := len(q.more)
	for i, n := range refused {
		if room >= 0 && chars(networkText(append(lines, n.text), more+len(refused)-i-1)) > room {
			more += len(refused) - i
			break
		}
		lines = append(lines, n.text)
	}
	if len(lines) == 0 {
		return ""
	}
	q.notices = slices.DeleteFunc(q.notices, func(n notice) bool { return n.kind == netRefused })
	clear(q.more)
	return networkText(lines, more)
}

// drop forgets a session's notices.
func (b *noticeBox) drop(owner string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, owner)
}

// taskNoticesHeading heads the task notices the model reads.
const taskNoticesHeading = "[background task notices; no reply needed]"

// taskNoticesText is how task notices read: a heading, then one notice per
// line; "" for none.
func taskNoticesText(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return taskNoticesHeading + "\n" + strings.Join(lines, "\n")
}

// networkText is how the proxy's refusals read: a heading, one line per
// destination, and how many more there were.
func networkText(lines []string, more int) string {
	s := "[sandbox network: connections refused by the proxy]\n" + strings.Join(lines, "\n")
	switch {
	case more == 1:
		s += "\n…and connections to 1 more destination were refused."
	case more > 1:
		s += fmt.Sprintf("\n…and connections to %d more destinations were refused.", more)
	}
	return s
}

func chars(s string) int { return utf8.RuneCountInString(s) }

// TakeNotices returns, and forgets, what waits for the session besides
// its results, as texts to go beside a result of used characters: its
// task notices (that a background task ended, or waits for input) and
// its network refusals (EgressRefused), within what the result leaves of
// the budget of one result (Options.MaxResultChars), each set apart by a
// blank line. What does not fit waits for the next result: task notices
// whole, network refusals as a count. A task notice never waits once
// its session has read what it says (bash_output, bash_kill). Front
// ends add each text as a block of its own after "\n\n" (MCP), or as a
// message of this agent's (ACP, with used 0).
func (t *Tools) TakeNotices(sessionID string, used int) []string {
	room := -1 // no bound
	if t.maxChars > 0 {
		room = max(t.maxChars-used-2, 0)
	}
	return t.notices.take(sessionID, room)
}
