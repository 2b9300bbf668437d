package local

import (
	"strings"
	"unicode"
)

// A terminal shows what is typed: the kernel echoes it (ECHO), or the
// program does, drawing the line being edited (readline, node, sqlite3 in
// their raw mode). The model knows what it typed, so a read leaves that
// echo out of the text: exactly the characters typed, at the place the
// output was when they were written, and only as far as they match. What
// the program printed itself stays, and so does every byte in the spill
// file.

// echo is the text a terminal is expected to show of the input just
// typed, from offset at of its output stream on. It is sure when the
// kernel echoes (ECHO): then the bytes at that place are the echo,
// whole or in part. A program's own line editor (raw mode, no ECHO)
// shows a whole line typed back as it reads it, and so does a program
// that prints what it read: only a whole line, matched whole, is left
// out then.
type echo struct {
	at   int64
	text string
	sure bool
}

// echoText is how a terminal shows data typed into it, as a read's text
// reads (each line end as \n, no C1 control character); ok is false for
// data that holds a C0 control character other than a line end (Ctrl-C,
// a tab that completes, an arrow key): what a terminal shows for it is
// not the data.
func echoText(data []byte) (string, bool) {
	for _, c := range data {
		if c < ' ' && c != '\n' && c != '\r' || c == 0x7f {
			return "", false
		}
	}
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\r' {
			return -1 // C1, which termText drops
		}
		return r
	}, s)
	return strings.ReplaceAll(s, "\r", "\n"), s != ""
}

// expectEcho records the echo the terminal will show (nil: none). An
// echo of the kernel's still expected, none of it read yet, goes on with
// the new one (the rest of a line typed in parts); any other is
// replaced.
func (s *stream) expectEcho(e *echo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.echo; e != nil && e.sure && old != nil && old.sure && old.at >= s.read {
		e = &echo{at: old.at, text: old.text + e.text, sure: true}
	}
	s.echo = e
}

// termRead is the text of b, the stream's bytes [from, from+len(b)), with
// the expected echo left out where it begins in b; s.mu is held. An echo
// that b shows only part of stays expected for the rest, past b.
func (s *stream) termRead(b []byte, from int64) string {
	e := s.echo
	end := from + int64(len(b))
	if e == nil || e.at > end {
		return termText(validText(b))
	}
	s.echo = nil
	if e.at < from {
		return termText(validText(b)) // read before, by a cut: never matched
	}
	k := e.at - from
	head, tail := termText(validText(b[:k])), termText(validText(b[k:]))
	if !e.sure {
		return head + strings.TrimPrefix(tail, e.text)
	}
	rest, left := cutEcho(tail, e.text)
	if left != "" {
		s.echo = &echo{at: end, text: left, sure: true}
	}
	return head + rest
}

// cutEcho removes from the start of text the part of echo it shows: all
// of it; or, when text shows only its start, that start (left is the
// rest, still to come); or else its whole lines that text begins with.
func cutEcho(text, echo string) (rest, left string) {
	switch {
	case strings.HasPrefix(text, echo):
		return text[len(echo):], ""
	case strings.HasPrefix(echo, text):
		return "", echo[len(text):]
	}
	n := 0
	for line := range strings.Lines(echo) {
		if !strings.HasSuffix(line, "\n") || !strings.HasPrefix(text[n:], line) {
			break
		}
		n += len(line)
	}
	return text[n:], ""
}
