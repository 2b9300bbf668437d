// Package coalesce delivers a stream of text to a slow consumer without
// ever blocking the producer, in bounded memory. Pieces are sent in order
// from a goroutine of the Sender's own; text that piles up while a send is
// in flight goes out together as one piece. A Sender keeps at most
// Options.MaxPending bytes unsent: past that the oldest unsent text is
// dropped, and the next piece says how many bytes were skipped before it,
// so a consumer that falls behind sees the newest output and a count of
// what it missed, and Add stays O(len(text)) however far behind it is.
//
// The text may be tagged by stream (a command's stdout and stderr, say):
// AddTo names the stream of each text, consecutive text of one stream
// joins into one piece, and text of different streams goes out as
// separate pieces in the order it was added.
package coalesce

import (
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultMaxPending is how many unsent bytes a Sender keeps by default.
const DefaultMaxPending = 64 << 10

// Options configures a Sender. A nil *Options means all defaults.
type Options struct {
	// Every, if positive, is the least time between two sends; text that
	// arrives meanwhile is joined. Zero sends as soon as the consumer is
	// free. The final flush on Close does not wait for it.
	Every time.Duration
	// MaxPending bounds the bytes kept unsent, of all streams together.
	// When more arrive, the oldest are dropped and counted in the next
	// Piece's Skipped. Zero means DefaultMaxPending; smaller values than
	// utf8.UTFMax are raised to it, so that one character always fits.
	MaxPending int
}

// Piece is one send.
type Piece struct {
	// Stream is the stream Text belongs to, as named to AddTo; "" for
	// text given to Add.
	Stream string
	// Text is what is sent now: the oldest unsent text of one stream,
	// up to where text of another stream follows; at most MaxPending
	// bytes, starting at a character boundary. It is never empty.
	Text string
	// Skipped counts the bytes dropped unsent, of any stream, just
	// before Text, since the previous send.
	Skipped int64
}

// Sender sends text added with Add or AddTo through its send function.
// Make it with New; Close it to flush.
type Sender struct {
	send  func(Piece)
	every time.Duration
	max   int

	mu      sync.Mutex
	buf     []byte // the unsent text is buf[head:]; cap(buf) <= 2*max
	head    int
	runs    []run // the streams of buf[head:], in order, from runs[first]; cap(runs) <= 2*max
	first   int
	skipped int64 // bytes dropped since the last send
	closed  bool
	wake    chan struct{} // a token: something to look at
	stop    chan struct{} // closed by Close: cut any pacing short
	done    chan struct{} // closed when the loop is over
}

// run is the next n > 0 unsent bytes, of one stream.
type run struct {
	stream string
	n      int
}

// New starts a Sender that calls send, one call at a time, with the pieces.
// The text given to Add and AddTo must be valid UTF-8 for the pieces to
// be.
func New(send func(Piece), opts *Options) *Sender {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	s := &Sender{
		send: send, every: o.Every, max: max(o.MaxPending, utf8.UTFMax),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go s.loop()
	return s
}

// Add queues text of the untagged stream "": it is AddTo("", text).
func (s *Sender) Add(text []byte) { s.AddTo("", text) }

// AddTo queues text of the named stream (it copies what it keeps: text may
// be reused once AddTo returns). It never blocks on the consumer, and it
// costs O(len(text)) amortised, however much is pending.
func (s *Sender) AddTo(stream string, text []byte) {
	if len(text) == 0 {
		return
	}
	s.mu.Lock()
	if len(text) >= s.max {
		// The text alone fills the window: all that is pending goes, and
		// the text's head too.
		cut := runeStart(text, len(text)-s.max)
		s.skipped += int64(len(s.buf)-s.head) + int64(cut)
		s.buf, s.head = s.buf[:0], 0
		s.runs, s.first = s.runs[:0], 0
		text = text[cut:]
	}
	s.buf = makeRoom(s.buf, &s.head, len(text), 512, 2*s.max)
	s.buf = append(s.buf, text...)
	if last := len(s.runs) - 1; last >= s.first && s.runs[last].stream == stream {
		s.runs[last].n += len(text)
	} else {
		s.runs = makeRoom(s.runs, &s.first, 1, 8, 2*s.max)
		s.runs = append(s.runs, run{stream, len(text)})
	}
	if over := len(s.buf) - s.head - s.max; over > 0 {
		s.drop(runeStart(s.buf[s.head:], over))
	}
	s.mu.Unlock()
	s.poke()
}

// drop drops the oldest n unsent bytes, and the runs they empty.
func (s *Sender) drop(n int) {
	s.head += n
	s.skipped += int64(n)
	for n > 0 {
		r := &s.runs[s.first]
		if r.n > n {
			r.n -= n
			return
		}
		n -= r.n
		s.first++
	}
}

// makeRoom returns q, its live part q[*head:] moved if need be so that n
// more elements can be appended, and never grown past limit elements. The
// callers keep the live part at most limit/2 before the append (MaxPending
// bytes; as many runs, each at least a byte), and the live part and n
// together at most limit. q grows by doubling, from floor, up to limit; at
// that size the live part slides to its front, which copies at most limit/2
// elements and happens only after at least limit/2 were appended since the
// last time, so that appending costs O(1) amortised per element.
func makeRoom[E any](q []E, head *int, n, floor, limit int) []E {
	if len(q)+n <= cap(q) {
		return q
	}
	live := q[*head:]
	*head = 0
	if c := cap(q); c < limit {
		nq := make([]E, len(live), min(max(2*c, len(live)+n, floor), limit))
		copy(nq, live)
		return nq
	}
	return q[:copy(q, live)]
}

// runeStart is the first character boundary of s at or after i, looking
// at most utf8.UTFMax-1 bytes ahead (further on, s is not UTF-8: cut at i).
func runeStart[T string | []byte](s T, i int) int {
	for j := i; j < len(s) && j < i+utf8.UTFMax; j++ {
		if utf8.RuneStart(s[j]) {
			return j
		}
	}
	return i
}

// state is, for tests, what a Sender holds: the unsent bytes, the bytes
// it holds for them (the buffer's capacity), whether the unsent text
// starts at a character boundary, and its runs, with the room it holds
// for them.
type state struct {
	unsent, held int
	atRuneStart  bool
	runs         []run
	runsHeld     int
}

// pending reports, for tests, the Sender's state.
func (s *Sender) pending() state {
	s.mu.Lock()
	defer s.mu.Unlock()
	unsent := len(s.buf) - s.head
	return state{unsent: unsent, held: cap(s.buf), atRuneStart: unsent == 0 || utf8.RuneStart(s.buf[s.head]),
		runs: append([]run(nil), s.runs[s.first:]...), runsHeld: cap(s.runs)}
}

func (s *Sender) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close sends what is pending and returns once everything went out. Add
// and AddTo must not be called after Close.
func (s *Sender) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	s.poke()
	<-s.done
}

func (s *Sender) loop() {
	defer close(s.done)
	var pace *time.Timer
	for range s.wake {
		p, more, closed := s.take()
		sent := p.Text != "" // never empty when bytes were skipped
		if sent {
			s.send(p)
		}
		if closed && !more {
			if pace != nil {
				pace.Stop()
			}
			return
		}
		if more {
			s.poke() // another stream's text is next
		}
		if s.every > 0 && sent {
			if pace == nil {
				pace = time.NewTimer(s.every)
			} else {
				pace.Reset(s.every)
			}
			select { // a token that arrives meanwhile waits in wake
			case <-pace.C:
			case <-s.stop:
			}
		}
	}
}

// take removes the oldest run of pending text into a piece, with the bytes
// skipped before it: one copy of at most max bytes. more reports whether
// text of another stream is pending after it.
func (s *Sender) take() (p Piece, more, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first == len(s.runs) {
		return Piece{}, false, s.closed // nothing pending, so nothing skipped
	}
	r := s.runs[s.first]
	p = Piece{Stream: r.stream, Text: string(s.buf[s.head : s.head+r.n]), Skipped: s.skipped}
	s.head, s.first, s.skipped = s.head+r.n, s.first+1, 0
	if s.first == len(s.runs) {
		s.buf, s.head, s.runs, s.first = s.buf[:0], 0, s.runs[:0], 0
	}
	return p, s.first < len(s.runs), s.closed
}
