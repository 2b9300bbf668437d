package local

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi/parser"
)

// termText is what is read of a terminal's output: its control sequences
// removed (colours, cursor movement, titles), each line as carriage
// returns and backspaces left it (a progress bar's last state), the
// terminal's \r\n as \n, and no other control character but tabs.
func termText(s string) string {
	s = strings.ReplaceAll(stripSequences(s), "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = termLine(l)
	}
	return strings.Join(lines, "\n")
}

// stripSequences removes the control sequences (CSI, OSC, DCS, …) from s,
// keeping its characters and its C0 control characters, by the state
// machine of charmbracelet/x/ansi's parser (the package ansi itself, whose
// Strip does the same, would bring go-runewidth, whose init costs every
// process that links it 36 ms: every jail's agent, every dsh-bash).
func stripSequences(s string) string {
	var b strings.Builder
	state := parser.GroundState
	for i := 0; i < len(s); i++ {
		c := s[i]
		if state == parser.GroundState && c >= 0x80 {
			// UTF-8: a character's bytes are kept whole (the text is valid
			// UTF-8 already).
			n := utf8Len(c)
			b.WriteString(s[i:min(i+n, len(s))])
			i += n - 1
			continue
		}
		next, action := parser.Table.Transition(state, c)
		if action == parser.PrintAction || action == parser.ExecuteAction {
			b.WriteByte(c)
		}
		state = next
	}
	return b.String()
}

// utf8Len is the length of the UTF-8 sequence that c begins (1 for a byte
// that begins none).
func utf8Len(c byte) int {
	switch {
	case c >= 0xf0:
		return 4
	case c >= 0xe0:
		return 3
	case c >= 0xc0:
		return 2
	}
	return 1
}

// termLine applies one line's carriage returns and backspaces, and drops
// its other control characters (C0, DEL and C1) but tabs.
func termLine(l string) string {
	if i := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); i >= 0 {
		l = l[i+1:]
	}
	var b []rune
	for _, r := range l {
		switch {
		case r == '\b':
			if len(b) > 0 {
				b = b[:len(b)-1]
			}
		case r == '\t' || !unicode.IsControl(r):
			b = append(b, r)
		}
	}
	return string(b)
}

// escapeCompleteLen returns the length of b without a trailing control
// sequence that has begun but is not complete yet (a read between its
// bytes holds it back for the next one). A sequence longer than
// maxHeldEscape is not held: it is garbage, not a sequence.
func escapeCompleteLen(b []byte) int {
	from := max(len(b)-maxHeldEscape, 0)
	i := strings.LastIndexByte(string(b[from:]), 0x1b)
	if i < 0 {
		return len(b)
	}
	i += from
	if escapeComplete(b[i:]) {
		return len(b)
	}
	return i
}

const maxHeldEscape = 4 << 10

// escapeComplete reports whether seq, which starts with ESC, holds a whole
// control sequence.
func escapeComplete(seq []byte) bool {
	if len(seq) < 2 {
		return false
	}
	switch seq[1] {
	case '[': // CSI: parameters, then a final byte
		for _, c := range seq[2:] {
			if c >= 0x40 && c <= 0x7e {
				return true
			}
		}
		return false
	case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS: to BEL or ST
		return strings.ContainsAny(string(seq[2:]), "\a") || strings.Contains(string(seq[2:]), "\x1b\\")
	case '(', ')', '*', '+', '#', '%', ' ':
		return len(seq) >= 3
	}
	return true
}
