package coalesce

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
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

// add is one AddTo.
type add struct{ stream, text string }

// stuckWith starts a Sender with opts whose consumer is stuck on a first
// piece "x", makes adds, frees the consumer, closes the Sender and returns
// the pieces sent after the first.
func stuckWith(t *testing.T, opts *Options, adds []add) []Piece {
	t.Helper()
	c := newStuck()
	s := New(c.send, opts)
	s.Add([]byte("x"))
	<-c.first
	for _, a := range adds {
		s.AddTo(a.stream, []byte(a.text))
	}
	close(c.release)
	s.Close()
	got := c.pieces()
	if len(got) == 0 || got[0] != (Piece{Text: "x"}) {
		t.Fatalf("the first piece is not %q: %+v", "x", got)
	}
	return got[1:]
}

// TestStreams: while the consumer is stuck, text of one stream joins into
// one piece and text of different streams keeps its order; the oldest
// bytes are dropped across stream boundaries, at character boundaries,
// and counted in the first piece after them.
func TestStreams(t *testing.T) {
	tests := []struct {
		name string
		max  int
		adds []add
		want []Piece // the pieces sent once the consumer is free
	}{
		{"one stream joins", 0, []add{{"out", "a"}, {"out", "b"}}, []Piece{{"out", "ab", 0}}},
		{"order across streams", 0, []add{{"out", "a"}, {"err", "b"}, {"err", "c"}, {"out", "d"}, {"", "e"}},
			[]Piece{{"out", "a", 0}, {"err", "bc", 0}, {"out", "d", 0}, {"", "e", 0}}},
		{"drop inside the oldest run", 8, []add{{"out", "12345"}, {"err", "6789"}, {"out", "€"}},
			[]Piece{{"out", "5", 4}, {"err", "6789", 0}, {"out", "€", 0}}},
		{"drop whole runs of both streams", 8, []add{{"out", "ab"}, {"err", "cd"}, {"out", "efgh"}, {"err", "ijkl"}},
			[]Piece{{"out", "efgh", 4}, {"err", "ijkl", 0}}},
		{"drop, then join", 8, []add{{"out", "abcdef"}, {"err", "gh"}, {"err", "ij"}},
			[]Piece{{"out", "cdef", 2}, {"err", "ghij", 0}}},
		{"a cut inside a character of the next stream", 8, []add{{"out", "ab"}, {"err", "é€"}, {"out", "cdef"}},
			[]Piece{{"err", "€", 4}, {"out", "cdef", 0}}},
		{"a character cut at a run's end drops the run", 8, []add{{"out", "a€"}, {"err", "bcdefg"}},
			[]Piece{{"err", "bcdefg", 4}}},
		{"a long add of another stream drops all", 8, []add{{"out", "ab"}, {"err", "xy"}, {"out", "0123456789"}},
			[]Piece{{"out", "23456789", 6}}},
		{"a long add cut inside a character", 8, []add{{"out", "ab"}, {"err", "xy€€€"}},
			[]Piece{{"err", "€€", 7}}},
		{"a tiny window holds one character", 1, []add{{"out", "é"}, {"err", "𝄞"}},
			[]Piece{{"err", "𝄞", 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := stuckWith(t, &Options{MaxPending: tc.max}, tc.adds); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sent %+v, want %+v", got, tc.want)
			}
		})
	}
}

// gate is a consumer that records pieces and blocks in each send until
// told to go on; sent says which piece is in the send.
type gate struct {
	sent chan Piece
	next chan struct{}
}

func (g *gate) send(p Piece) {
	g.sent <- p
	<-g.next
}

// TestSkipsAfterATake: bytes dropped while the consumer is busy with one
// stream's piece are counted in the next piece sent, not in the piece in
// flight.
func TestSkipsAfterATake(t *testing.T) {
	g := &gate{sent: make(chan Piece), next: make(chan struct{})}
	s := New(g.send, &Options{MaxPending: 8})
	s.Add([]byte("x"))
	want := []Piece{{"", "x", 0}, {"err", "ab", 0}, {"out", "defghijk", 1}}
	for i, w := range want {
		if p := <-g.sent; p != w {
			t.Errorf("piece %d: %+v, want %+v", i, p, w)
		}
		switch i {
		case 0: // two runs wait: "ab" of err, "cd" of out
			s.AddTo("err", []byte("ab"))
			s.AddTo("out", []byte("cd"))
		case 1: // "ab" is out: "cd" and these 7 bytes are 1 too many
			s.AddTo("out", []byte("efghijk"))
		}
		if i < len(want)-1 {
			g.next <- struct{}{}
		}
	}
	close(g.next)
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	for {
		select {
		case p := <-g.sent:
			t.Errorf("a piece more: %+v", p)
		case <-closed:
			return
		}
	}
}

// TestStreamsLikeTheModel: whatever is added, of whatever streams, a
// Sender stuck from the start keeps its bounds after every add, and sends
// once free what the model says: the longest tail of everything that fits
// MaxPending bytes and starts at a character boundary, in one piece per
// run of a stream, the first counting all the rest as skipped.
func TestStreamsLikeTheModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	chars := []string{"a", "é", "€", "𝄞"}
	for _, limit := range []int{1, 5, 8, 64} {
		for trial := range 100 {
			var adds []add
			for range rng.IntN(40) {
				var b strings.Builder
				n := rng.IntN(4)
				if rng.IntN(8) == 0 {
					n = rng.IntN(2 * limit) // now and then, an add that may fill the window alone
				}
				for range n {
					b.WriteString(chars[rng.IntN(len(chars))])
				}
				adds = append(adds, add{[]string{"", "out", "err"}[rng.IntN(3)], b.String()})
			}
			got := stuckChecked(t, limit, adds)
			if want := model(adds, limit); !slices.Equal(got, want) {
				t.Fatalf("limit %d, trial %d: %q\nsent  %+v\nwant %+v", limit, trial, adds, got, want)
			}
		}
	}
}

// stuckChecked is stuckWith, checking the Sender's bounds after each add.
func stuckChecked(t *testing.T, limit int, adds []add) []Piece {
	t.Helper()
	c := newStuck()
	s := New(c.send, &Options{MaxPending: limit})
	s.Add([]byte("x"))
	<-c.first
	for i, a := range adds {
		s.AddTo(a.stream, []byte(a.text))
		if err := s.pending().check(limit); err != nil {
			t.Fatalf("after %d adds of %q: %v", i+1, adds, err)
		}
	}
	close(c.release)
	s.Close()
	return c.pieces()[1:]
}

// check reports a broken bound of a Sender of MaxPending limit.
func (st state) check(limit int) error {
	limit = max(limit, utf8.UTFMax)
	sum := 0
	for i, r := range st.runs {
		if r.n <= 0 || i > 0 && st.runs[i-1].stream == r.stream {
			return fmt.Errorf("runs %+v: an empty run, or two of one stream in a row", st.runs)
		}
		sum += r.n
	}
	switch {
	case sum != st.unsent:
		return fmt.Errorf("runs %+v add up to %d bytes, %d unsent", st.runs, sum, st.unsent)
	case st.unsent > limit || !st.atRuneStart:
		return fmt.Errorf("%d bytes unsent of at most %d, from a character boundary %v", st.unsent, limit, st.atRuneStart)
	case st.held > 2*limit || st.runsHeld > 2*limit:
		return fmt.Errorf("room held for %d bytes and %d runs, over %d", st.held, st.runsHeld, 2*limit)
	}
	return nil
}

// model is what a Sender of MaxPending limit, stuck from the start, sends
// of adds once free.
func model(adds []add, limit int) []Piece {
	limit = max(limit, utf8.UTFMax)
	var all strings.Builder
	var streams []string // of each byte
	for _, a := range adds {
		all.WriteString(a.text)
		for range len(a.text) {
			streams = append(streams, a.stream)
		}
	}
	text := all.String()
	cut := max(len(text)-limit, 0)
	for cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut++
	}
	var ps []Piece
	for i := cut; i < len(text); i++ {
		if len(ps) == 0 || ps[len(ps)-1].Stream != streams[i] {
			ps = append(ps, Piece{Stream: streams[i]})
		}
		ps[len(ps)-1].Text += text[i : i+1]
	}
	if len(ps) > 0 {
		ps[0].Skipped = int64(cut)
	}
	return ps
}

// TestStreamsBounded: while the consumer is stuck, a Sender fed a flood
// of two interleaved streams keeps at most its bound unsent, in bounded
// room, drops the oldest bytes at character boundaries and counts them,
// and sends the rest, in order, once the consumer moves.
func TestStreamsBounded(t *testing.T) {
	const limit = 1000
	var adds []add
	for i := range 10000 {
		stream := "stdout"
		if i%3 == 0 {
			stream = "stderr"
		}
		adds = append(adds, add{stream, strings.Repeat("é", 50)}) // 100 bytes, 2 per character
	}
	got := stuckChecked(t, limit, adds)
	sent, skipped := 0, int64(0)
	for _, p := range got {
		if !utf8.ValidString(p.Text) {
			t.Fatalf("a piece is not valid UTF-8: %q", p.Text[:8])
		}
		sent += len(p.Text)
		skipped += p.Skipped
	}
	if int64(sent)+skipped != 100*10000 || sent > limit || skipped == 0 {
		t.Errorf("sent %d + skipped %d, want %d in all, at most %d sent", sent, skipped, 100*10000, limit)
	}
	if want := model(adds, limit); !slices.Equal(got, want) {
		t.Errorf("sent %+v, want %+v", got, want)
	}
}

// TestRunsBounded: the worst case for the runs, one byte of each stream in
// turn, keeps them in bounded room too, and keeps every one in order.
func TestRunsBounded(t *testing.T) {
	var adds []add
	for i := range 20000 {
		adds = append(adds, add{[]string{"out", "err"}[i%2], string(rune('a' + i%26))})
	}
	got := stuckChecked(t, 64, adds)
	if want := model(adds, 64); !slices.Equal(got, want) || len(got) != 64 {
		t.Errorf("sent %d pieces %+v, want 64: %+v", len(got), got, want)
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
		if st := s.pending(); st.unsent > DefaultMaxPending || st.held > 2*DefaultMaxPending || !st.atRuneStart {
			t.Fatalf("after %d bytes the sender holds %d bytes, %d unsent, starting at a character boundary %v", added, st.held, st.unsent, st.atRuneStart)
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
// that is stuck, so that every Add drops old text ("stuck"); and AddTo of
// two streams in turn, so that every text starts a run ("streams/...").
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
		b.Run(fmt.Sprintf("streams/free/%d", size), func(b *testing.B) {
			s := New(func(Piece) {}, nil)
			b.SetBytes(int64(size))
			i := 0
			for b.Loop() {
				s.AddTo([]string{"out", "err"}[i%2], chunk)
				i++
			}
			s.Close()
		})
		b.Run(fmt.Sprintf("streams/stuck/%d", size), func(b *testing.B) {
			c := newStuck()
			s := New(c.send, nil)
			s.Add([]byte("x"))
			<-c.first
			b.SetBytes(int64(size))
			i := 0
			for b.Loop() {
				s.AddTo([]string{"out", "err"}[i%2], chunk)
				i++
			}
			close(c.release)
			s.Close()
		})
	}
}
