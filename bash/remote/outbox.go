package remote

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
)

// DefaultMaxPendingOutput is how many bytes of a run's live output the
// server keeps unsent by default.
const DefaultMaxPendingOutput = 64 << 10

// piece is live output of one stream.
type piece struct {
	stream  bash.Stream
	text    []byte
	skipped int64 // bytes dropped just before text
}

// outbox passes a run's live output from the executor's observer, which
// must not block, to a goroutine that sends it over the connection, which
// may: in order, in bounded memory. When more than max bytes are unsent the
// oldest are dropped and counted in the next piece's skipped, so a slow
// link costs the client the middle of the live output, never the result.
type outbox struct {
	send  func(piece) // called from the outbox's goroutine, one at a time
	max   int
	every time.Duration // least time between two sends; 0: none
	stop  chan struct{} // closed by close: cut any pacing short

	mu      sync.Mutex
	queue   []piece
	spare   []byte // a dropped piece's buffer, for the next
	size    int
	skipped int64
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func newOutbox(limit int, every time.Duration, send func(piece)) *outbox {
	if limit <= 0 {
		limit = DefaultMaxPendingOutput
	}
	o := &outbox{send: send, max: max(limit, utf8.UTFMax), every: every,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go o.loop()
	return o
}

// add queues a copy of text; it never blocks on the sender.
func (o *outbox) add(stream bash.Stream, text []byte) {
	if len(text) == 0 {
		return
	}
	o.mu.Lock()
	if len(text) >= o.max {
		// The text alone fills the bound: what is queued goes, and so does
		// the text's head, before anything is copied.
		cut := runeStartAt(text, len(text)-o.max)
		o.dropAll(int64(cut))
		text = text[cut:]
	}
	if n := len(o.queue); n > 0 && o.queue[n-1].stream == stream {
		o.queue[n-1].text = append(o.queue[n-1].text, text...)
	} else {
		o.queue = append(o.queue, piece{stream: stream, text: append(o.spare[:0], text...)})
		o.spare = nil
	}
	o.size += len(text)
	o.trim()
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// dropAll drops everything queued, and skipped more bytes after it,
// keeping one buffer for reuse.
func (o *outbox) dropAll(skipped int64) {
	for _, p := range o.queue {
		o.skipped += int64(len(p.text)) + p.skipped
	}
	o.skipped += skipped
	if len(o.queue) > 0 {
		o.spare = o.queue[0].text[:0:cap(o.queue[0].text)]
	}
	o.queue, o.size = o.queue[:0], 0
}

// runeStartAt is the first character boundary at or after i.
func runeStartAt(b []byte, i int) int {
	for i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return i
}

// trim drops the oldest bytes past max, at character boundaries.
func (o *outbox) trim() {
	for o.size > o.max {
		head := &o.queue[0]
		over := o.size - o.max
		if over >= len(head.text) {
			o.skipped += int64(len(head.text)) + head.skipped
			o.size -= len(head.text)
			o.queue = o.queue[1:]
			continue
		}
		cut := runeStartAt(head.text, over)
		o.skipped += int64(cut)
		o.size -= cut
		head.text = head.text[cut:]
	}
}

// take removes the oldest piece, with what was skipped before it.
func (o *outbox) take() (p piece, ok, closed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queue) == 0 {
		return piece{}, false, o.closed
	}
	p, o.queue = o.queue[0], o.queue[1:]
	p.skipped += o.skipped
	o.skipped = 0
	o.size -= len(p.text)
	return p, true, false
}

func (o *outbox) loop() {
	defer close(o.done)
	for range o.wake {
		for {
			p, ok, closed := o.take()
			if closed {
				return
			}
			if !ok {
				break
			}
			o.send(p)
			o.pace()
		}
	}
}

// pace waits the least time between two sends, unless close cuts it short.
func (o *outbox) pace() {
	if o.every <= 0 {
		return
	}
	t := time.NewTimer(o.every)
	defer t.Stop()
	select {
	case <-t.C:
	case <-o.stop:
	}
}

// close sends what is pending and returns once it went out.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	close(o.stop)
	select {
	case o.wake <- struct{}{}:
	default:
	}
	<-o.done
}
