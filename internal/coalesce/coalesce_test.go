package coalesce

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stuck is a consumer that records pieces and blocks in its first send
// until release is closed; first is closed once that send has begun.
type stuck struct {
	mu      sync.Mutex
	got     []Piece
	first   chan struct{}
	release chan struct{}
}

func newStuck() *stuck {
	return &stuck{first: make(chan struct{}), release: make(chan struct{})}
}

func (c *stuck) send(p Piece) {
	c.mu.Lock()
	c.got = append(c.got, p)
	n := len(c.got)
	c.mu.Unlock()
	if n == 1 {
		close(c.first)
		<-c.release
	}
}

func (c *stuck) pieces() []Piece {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Piece(nil), c.got...)
}

func texts(ps []Piece) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Text)
	}
	return out
}

// TestOrderAndCoalescing: a blocked consumer never blocks Add; what piled
// up goes out as one piece, in order, and Close flushes everything.
func TestOrderAndCoalescing(t *testing.T) {
	c := newStuck()
	s := New(c.send, nil)
	s.Add([]byte("a"))
	<-c.first
	for i := range 100 {
		s.Add([]byte(string(rune('0' + i%10)))) // never blocks
	}
	close(c.release)
	s.Close()
	got := c.pieces()
	if len(got) < 2 || got[0].Text != "a" || strings.Join(texts(got), "") != "a"+strings.Repeat("0123456789", 10) {
		t.Errorf("sent %+v", got)
	}
	if len(got) > 3 {
		t.Errorf("%d sends: the backlog was not coalesced", len(got))
	}
	for _, p := range got {
		if p.Skipped != 0 {
			t.Errorf("skipped %d bytes of 101", p.Skipped)
		}
	}
}

func TestPacingAndCloseFlush(t *testing.T) {
	var mu sync.Mutex
	var got []string
	s := New(func(p Piece) {
		mu.Lock()
		got = append(got, p.Text)
		mu.Unlock()
	}, &Options{Every: time.Hour}) // only the first piece goes before Close
	s.Add([]byte("x"))
	for range 10 {
		s.Add([]byte("y"))
	}
	s.Close() // does not wait the hour
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "") != "x"+strings.Repeat("y", 10) {
		t.Errorf("sent %q", got)
	}
}

func TestCloseEmpty(t *testing.T) {
	calls := 0
	s := New(func(Piece) { calls++ }, nil)
	s.Add([]byte(""))
	s.Close()
	s.Close()
	if calls != 0 {
		t.Errorf("%d sends", calls)
	}
}

// TestKeepsTheTail: while the consumer is stuck, a Sender keeps the newest
// MaxPending bytes, cut at a character boundary, and counts the rest.
func TestKeepsTheTail(t *testing.T) {
	tests := []struct {
		name string
		max  int
		adds []string
		want Piece // the piece sent once the consumer is free
	}{
		{"fits exactly", 8, []string{"1234", "5678"}, Piece{Text: "12345678"}},
		{"small adds overflow", 8, []string{"12345", "6789", "€"}, Piece{Text: "56789€", Skipped: 4}},
		{"small adds cut inside a character", 8, []string{"€€", "ab", "c"}, Piece{Text: "€abc", Skipped: 3}},
		{"a long add cut inside a character", 8, []string{"a€€€"}, Piece{Text: "€€", Skipped: 4}},
		{"a long add drops what was pending", 8, []string{"ab", "0123456789"}, Piece{Text: "23456789", Skipped: 4}},
		{"a long add cut inside a character, after others", 8, []string{"ab", "xy€€€"}, Piece{Text: "€€", Skipped: 2 + 5}},
		{"a tiny window still holds one character", 1, []string{"é", "𝄞"}, Piece{Text: "𝄞", Skipped: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newStuck()
			s := New(c.send, &Options{MaxPending: tc.max})
			s.Add([]byte("x"))
			<-c.first
			for _, a := range tc.adds {
				s.Add([]byte(a))
			}
			close(c.release)
			s.Close()
			if got, want := c.pieces(), []Piece{{Text: "x"}, tc.want}; !reflect.DeepEqual(got, want) {
				t.Errorf("sent %+v, want %+v", got, want)
			}
		})
	}
}

// TestBoundedUnderBurst: 200 MB of text in pieces of every size, against a
// consumer stuck the whole time. The Sender never holds more than twice
// DefaultMaxPending bytes, never more than DefaultMaxPending of them
// unsent, always from a character boundary; every piece is valid UTF-8; the pieces and their skip counts add
// up to every byte; and the last piece is the stream's true tail.
func TestBoundedUnderBurst(t *testing.T) {
	const total = 200_000_000
	base := numbered(2 << 20)
	rng := rand.New(rand.NewPCG(1, 2))
	c := newStuck()
	s := New(c.send, nil)
	var added int64
	var recent []string // the last chunks, at least DefaultMaxPending bytes
	recentLen := 0
	for off := 0; added < total; {
		size := 1 + rng.IntN(4096) // small pieces half the time, up to 200 kB else
		if rng.IntN(2) == 0 {
			size = 1 + rng.IntN(200_000)
		}
		end := min(off+size, len(base))
		for end < len(base) && end > off+1 && !utf8.RuneStart(base[end]) {
			end--
		}
		chunk := base[off:end]
		off = end % len(base)
		s.Add([]byte(chunk))
		added += int64(len(chunk))
		recent, recentLen = append(recent, chunk), recentLen+len(chunk)
		for recentLen-len(recent[0]) >= DefaultMaxPending {
			recent, recentLen = recent[1:], recentLen-len(recent[0])
		}
		if unsent, held, atRuneStart := s.pending(); unsent > DefaultMaxPending || held > 2*DefaultMaxPending || !atRuneStart {
			t.Fatalf("after %d bytes the sender holds %d bytes, %d unsent, starting at a character boundary %v", added, held, unsent, atRuneStart)
		}
	}
	close(c.release)
	s.Close()
	got := c.pieces()
	var sum int64
	for i, p := range got {
		sum += p.Skipped + int64(len(p.Text))
		if !utf8.ValidString(p.Text) || len(p.Text) > DefaultMaxPending {
			t.Errorf("piece %d: %d bytes, valid UTF-8 %v", i, len(p.Text), utf8.ValidString(p.Text))
		}
	}
	if sum != added {
		t.Errorf("pieces and skips add up to %d bytes of %d", sum, added)
	}
	last := got[len(got)-1].Text
	if tail := strings.Join(recent, ""); !strings.HasSuffix(tail, last) || len(last) < DefaultMaxPending-utf8.UTFMax+1 {
		t.Errorf("the last piece (%d bytes) is not the stream's tail", len(last))
	}
}

// numbered is about n bytes of numbers and multibyte characters, in which
// no stretch shorter than the whole repeats.
func numbered(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d𝄞é€ ", i)
	}
	return b.String()
}

// BenchmarkAdd measures Add with a consumer that keeps up ("free") and one
// that is stuck, so that every Add drops old text ("stuck").
func BenchmarkAdd(b *testing.B) {
	for _, size := range []int{16, 4 << 10, 1 << 20} {
		chunk := []byte(numbered(size)[:size])
		b.Run(fmt.Sprintf("free/%d", size), func(b *testing.B) {
			s := New(func(Piece) {}, nil)
			b.SetBytes(int64(size))
			for b.Loop() {
				s.Add(chunk)
			}
			s.Close()
		})
		b.Run(fmt.Sprintf("stuck/%d", size), func(b *testing.B) {
			c := newStuck()
			s := New(c.send, nil)
			s.Add([]byte("x"))
			<-c.first
			b.SetBytes(int64(size))
			for b.Loop() {
				s.Add(chunk)
			}
			close(c.release)
			s.Close()
		})
	}
}
