// Package coalesce delivers a stream of text to a slow consumer without
// ever blocking the producer, in bounded memory. Pieces are sent in order
// from a goroutine of the Sender's own; text that piles up while a send is
// in flight goes out together as one piece. A Sender keeps at most
// Options.MaxPending bytes unsent: past that the oldest unsent text is
// dropped, and the next piece says how many bytes were skipped before it,
// so a consumer that falls behind sees the newest output and a count of
// what it missed, and Add stays O(len(text)) however far behind it is.
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
	// MaxPending bounds the bytes kept unsent. When more arrive, the
	// oldest are dropped and counted in the next Piece's Skipped. Zero
	// means DefaultMaxPending; smaller values than utf8.UTFMax are raised
	// to it, so that one character always fits.
	MaxPending int
}

// Piece is one send.
type Piece struct {
	// Text is what is sent now: the newest unsent text, at most MaxPending
	// bytes, starting at a character boundary. It is never empty.
	Text string
	// Skipped counts the bytes dropped unsent, just before Text, since the
	// previous send.
	Skipped int64
}

// Sender sends text added with Add through its send function. Make it
// with New; Close it to flush.
type Sender struct {
	send  func(Piece)
	every time.Duration
	max   int

	mu      sync.Mutex
	buf     []byte // the unsent text is buf[head:]; cap(buf) <= 2*max
	head    int
	skipped int64 // bytes dropped since the last send
	closed  bool
	wake    chan struct{} // a token: something to look at
	stop    chan struct{} // closed by Close: cut any pacing short
	done    chan struct{} // closed when the loop is over
}

// New starts a Sender that calls send, one call at a time, with the pieces.
// The text given to Add must be valid UTF-8 for the pieces to be.
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

// Add queues text (it copies what it keeps: text may be reused once Add
// returns). It never blocks on the consumer, and it costs O(len(text))
// amortised, however much is pending.
func (s *Sender) Add(text []byte) {
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
		text = text[cut:]
	}
	s.reserve(len(text))
	s.buf = append(s.buf, text...)
	if over := len(s.buf) - s.head - s.max; over > 0 {
		cut := s.head + runeStart(s.buf[s.head:], over)
		s.skipped += int64(cut - s.head)
		s.head = cut
	}
	s.mu.Unlock()
	s.poke()
}

// reserve makes room to append n bytes, where the unsent text and n
// together are at most 2*max: the buffer grows by doubling up to 2*max
// bytes, and at that size the unsent text slides to its front, which
// happens only after at least max more bytes were appended.
func (s *Sender) reserve(n int) {
	if len(s.buf)+n <= cap(s.buf) {
		return
	}
	live := s.buf[s.head:]
	if c := cap(s.buf); c < 2*s.max {
		nb := make([]byte, len(live), min(max(2*c, len(live)+n, 512), 2*s.max))
		copy(nb, live)
		s.buf = nb
	} else {
		s.buf = s.buf[:copy(s.buf, live)]
	}
	s.head = 0
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

// pending reports, for tests, the unsent bytes, the bytes the Sender holds
// for them (the buffer's capacity), and whether the unsent text starts at
// a character boundary.
func (s *Sender) pending() (unsent, held int, atRuneStart bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unsent = len(s.buf) - s.head
	return unsent, cap(s.buf), unsent == 0 || utf8.RuneStart(s.buf[s.head])
}

func (s *Sender) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close sends what is pending and returns once everything went out. Add
// must not be called after Close.
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
		p, closed := s.take()
		sent := p.Text != "" // never empty when bytes were skipped
		if sent {
			s.send(p)
		}
		if closed {
			if pace != nil {
				pace.Stop()
			}
			return
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

// take empties the pending text into a piece: one copy of at most max
// bytes.
func (s *Sender) take() (p Piece, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p = Piece{Text: string(s.buf[s.head:]), Skipped: s.skipped}
	s.buf, s.head, s.skipped = s.buf[:0], 0, 0
	return p, s.closed
}
