package local

import (
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
)

// stream holds one output stream of a command: the last max bytes in memory,
// a read cursor for incremental reads, and (after the first overflow) a spill
// file with the complete stream.
type stream struct {
	max int
	// spillAt is the length past which a spill file is made: max, or less
	// when the spec asked for one sooner (ExecSpec.SpillAfter).
	spillAt int64
	spill   *spiller
	name    string // "stdout" or "stderr", for the spill file's name
	owner   string // the task's owner token, for the spill file's directory
	// term: the stream is a terminal's output, read as text (termText);
	// the spill file keeps its raw bytes.
	term bool

	mu     sync.Mutex
	buf    []byte // bytes [total-len(buf), total) of the stream
	total  int64  // bytes written so far
	read   int64  // offset of the first unread byte
	closed bool   // EOF seen
	file   *spillFile
	// lost is set once a spill file was withdrawn (cap, budget or I/O error).
	lost bool
	// grew is closed (and replaced) whenever bytes arrive or the stream ends.
	grew chan struct{}
	// echo is the echo of the input a terminal's next read leaves out.
	echo *echo
	// syncs wait for the reader to have appended all it read (sync).
	syncs []chan struct{}
}

func newStream(name, owner string, max int, spillAfter int64, sp *spiller) *stream {
	at := int64(max)
	if spillAfter > 0 {
		at = min(at, spillAfter)
	}
	return &stream{name: name, owner: owner, max: max, spillAt: at, spill: sp, grew: make(chan struct{})}
}

// length is how many bytes were written to the stream so far.
func (s *stream) length() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// readPos is the offset of the first byte not read yet.
func (s *stream) readPos() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read
}

// changed returns a channel that is closed the next time bytes arrive or the
// stream ends.
func (s *stream) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grew
}

// notify wakes whoever waits on changed; s.mu is held.
func (s *stream) notify() {
	close(s.grew)
	s.grew = make(chan struct{})
}

// write appends p to the stream. It never blocks on anything but the spill
// file's write.
func (s *stream) write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	if s.file == nil && !s.lost && s.total+int64(len(p)) > s.spillAt {
		// First overflow: nothing has been dropped yet (spillAt <= max), so
		// the buffer plus p is the complete stream.
		f, err := s.spill.create(s.owner, s.name)
		if err != nil {
			s.lost = true
		} else {
			s.file = f
			s.toFile(s.buf)
		}
	}
	if s.file != nil {
		s.toFile(p)
	}
	s.total += int64(len(p))
	if len(p) >= s.max {
		s.buf = append(s.buf[:0], p[len(p)-s.max:]...)
		return
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) > 2*s.max {
		n := copy(s.buf, s.buf[len(s.buf)-s.max:])
		s.buf = s.buf[:n]
	}
}

func (s *stream) toFile(p []byte) {
	if err := s.file.write(p); err != nil {
		s.file.withdraw()
		s.file = nil
		s.lost = true
	}
}

// eof marks the end of the stream and closes the spill file; a close error
// withdraws it.
func (s *stream) eof() {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	s.closed = true
	if s.file != nil {
		if err := s.file.finish(); err != nil {
			s.file = nil
			s.lost = true
		}
	}
}

func (s *stream) spillPath() string {
	if s.file == nil || !s.file.available() {
		return ""
	}
	return s.file.path
}

// window returns the last max bytes held in memory and the offset of their
// first byte.
func (s *stream) window() ([]byte, int64) {
	b := s.buf
	if len(b) > s.max {
		b = b[len(b)-s.max:]
	}
	return b, s.total - int64(len(b))
}

// tail is the whole-run view: the last max bytes. When hold is set (the
// stream may go on, as for an adopted task), an incomplete trailing character
// is left out and stays unread for the next read; otherwise the read cursor
// moves to the end.
func (s *stream) tail(hold bool) bash.Output {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, start := s.window()
	out := bash.Output{Truncated: start > 0, SpillPath: s.spillPath(), Bytes: s.total}
	if out.Truncated {
		b = dropPartialHead(b)
	}
	out.Text = s.deliver(b, s.total-int64(len(b)), hold)
	return out
}

// next is the incremental view: what was written since the previous read.
func (s *stream) next() bash.Output {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, start := s.window()
	out := bash.Output{SpillPath: s.spillPath(), Bytes: s.total}
	if s.read < start {
		out.Truncated = true
		b = dropPartialHead(b)
	} else {
		b = b[s.read-start:]
	}
	out.Text = s.deliver(b, s.total-int64(len(b)), true)
	return out
}

// deliver marks b, the end of the stream from offset from on, as read
// and returns its text. With hold, an incomplete trailing character of a
// stream that may go on stays unread for the next read.
func (s *stream) deliver(b []byte, from int64, hold bool) string {
	end := s.total
	if hold && !s.closed {
		keep := completeLen(b)
		if s.term {
			keep = escapeCompleteLen(b[:keep])
		}
		end -= int64(len(b) - keep)
		b = b[:keep]
	}
	s.read = end
	if s.term {
		return s.termRead(b, from)
	}
	return validText(b)
}

// dropPartialHead drops the continuation bytes of a character whose first
// byte was cut off.
func dropPartialHead(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// completeLen returns the length of b without a trailing character that has
// started but is not complete yet.
func completeLen(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if b[i] >= 0xC2 && b[i] <= 0xF4 && !utf8.FullRune(b[i:]) {
			return i
		}
		break
	}
	return len(b)
}

// validText converts b to a string in which every byte that is not part of a
// valid UTF-8 sequence reads as U+FFFD.
func validText(b []byte) string { return string(validBytes(b)) }

// validBytes is b, or, if b is not valid UTF-8, a copy in which every byte
// that is not part of a valid sequence reads as U+FFFD.
func validBytes(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+len(b)/2)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// release removes the stream's spill file, once its task is forgotten.
func (s *stream) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		s.file.withdraw()
		s.file = nil
	}
}

// syncBound bounds how long sync waits for the stream's reader, which
// may be held up by a slow spill file.
const syncBound = 100 * time.Millisecond

// sync reports whether the stream now holds every byte its reader had
// read from f before the call: it cuts the reader's wait for more (a read
// deadline in the past), and the reader answers between two reads. A
// stream at its end is complete; false when the reader did not answer
// within syncBound.
func (s *stream) sync(f *os.File) bool {
	ack := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return true
	}
	if err := f.SetReadDeadline(time.Unix(1, 0)); err != nil {
		s.mu.Unlock()
		return true // closed: its reader is done
	}
	s.syncs = append(s.syncs, ack)
	s.mu.Unlock()
	t := time.NewTimer(syncBound)
	defer t.Stop()
	select {
	case <-ack:
		return true
	case <-t.C:
		return false
	}
}

// synced answers the syncs waiting: the reader has appended all it read.
// It lifts f's deadline (nil: the stream ended) in the same hold of s.mu
// as it takes them, so that a sync made after it sets one again.
func (s *stream) synced(f *os.File) {
	s.mu.Lock()
	acks := s.syncs
	s.syncs = nil
	if f != nil {
		_ = f.SetReadDeadline(time.Time{})
	}
	s.mu.Unlock()
	for _, c := range acks {
		close(c)
	}
}
