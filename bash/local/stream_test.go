//go:build linux

package local

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCompleteLen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"a\xe2", 1},
		{"a\xe2\x82", 1},
		{"a\xe2\x82\xac", 4},
		{"\xf0\x9f\x98", 0},
		{"\xf0\x9f\x98\x80", 4},
		{"a\xff", 2},     // invalid, not incomplete
		{"a\xe0\x80", 3}, // can never complete: invalid
		{"a\x82", 2},     // a lone continuation byte
		{"é\xc3", 2},
	}
	for _, tc := range tests {
		if got := completeLen([]byte(tc.in)); got != tc.want {
			t.Errorf("completeLen(%q) = %d; want %d", tc.in, got, tc.want)
		}
	}
}

func TestValidText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\xffb", "a\uFFFDb"},
		{"\xff\xfe", "\uFFFD\uFFFD"},
		{"\xe2\x82", "\uFFFD\uFFFD"},
		{"€", "€"},
	}
	for _, tc := range tests {
		if got := validText([]byte(tc.in)); got != tc.want {
			t.Errorf("validText(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzIncrementalReads: however the bytes arrive, every read is valid UTF-8,
// and when nothing was lost the reads add up to the whole stream's text.
func FuzzIncrementalReads(f *testing.F) {
	f.Add([]byte("héllo €😀\xff tail"), uint8(3), uint16(1000))
	f.Add([]byte(strings.Repeat("€", 100)), uint8(7), uint16(16))
	f.Add([]byte("\xe2\x82\xe2\x82\xac\xf0\x9f"), uint8(1), uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, step uint8, maxOut uint16) {
		sp := &spiller{parent: t.TempDir(), cap: 1 << 30, budget: 1 << 30}
		defer sp.close()
		s := newStream("stdout", "", max(int(maxOut), 4), 0, sp)
		n := max(int(step), 1)
		var got strings.Builder
		lossy := false
		read := func() {
			r := s.next()
			if !utf8.ValidString(r.Text) {
				t.Fatalf("invalid UTF-8 in a read: %q", r.Text)
			}
			got.WriteString(r.Text)
			lossy = lossy || r.Truncated
		}
		for i := 0; i < len(data); i += n {
			s.write(data[i:min(i+n, len(data))])
			read()
		}
		s.eof()
		read()
		if !lossy && got.String() != validText(data) {
			t.Fatalf("reads %q; whole stream %q", got.String(), validText(data))
		}
		if tail := s.tail(false); !utf8.ValidString(tail.Text) {
			t.Fatalf("invalid UTF-8 in the tail: %q", tail.Text)
		}
	})
}
