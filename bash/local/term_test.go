package local

import (
	"strings"
	"testing"
)

func TestTermText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain\n", "plain\n"},
		{"\x1b[1;31mred\x1b[0m\r\n", "red\n"},
		{"\x1b]0;title\x07after\n", "after\n"},
		{"\x1b]0;title\x1b\\after\n", "after\n"},
		{"\x1b[2J\x1b[Hcleared\n", "cleared\n"},
		{"got 10%\rgot 100%\r\n", "got 100%\n"},
		{"abc\b\bX\n", "aX\n"},
		{"bell\a and nul\x00\n", "bell and nul\n"},
		{"tab\there\n", "tab\there\n"},
		{"caf\u00e9 \u65e5\u672c\n", "caf\u00e9 \u65e5\u672c\n"},
		{"\x1b(Bcharset\n", "charset\n"},
		{"^C\r\n", "^C\n"},
		{"a\u009b31mb\n", "a31mb\n"},
	} {
		if got := termText(tc.in); got != tc.want {
			t.Errorf("termText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTermLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"tab\there", "tab\there"},
		{"bell\a nul\x00 esc\x1b del\x7f", "bell nul esc del"},
		{"a\u009b31mb", "a31mb"}, // C1 CSI
		{"\u0080first\u0085nel\u009flast", "firstnellast"},
		{"nbsp\u00a0caf\u00e9", "nbsp\u00a0caf\u00e9"}, // the first after C1 are text
		{"got 10%\rgot 100%\r", "got 100%"},
		{"abc\b\bX", "aX"},
		{"\u009b\bX", "X"},
	} {
		if got := termLine(tc.in); got != tc.want {
			t.Errorf("termLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEscapeCompleteLen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"text", 4},
		{"text\x1b", 4},
		{"text\x1b[", 4},
		{"text\x1b[1;3", 4},
		{"text\x1b[1;31m", 11},
		{"t\x1b]0;title", 1},
		{"t\x1b]0;title\x07", 11},
		{"t\x1b]0;title\x1b\\", 12},
		{"t\x1b(", 1},
		{"t\x1b(B", 4},
		// An unended sequence longer than maxHeldEscape is not held: a
		// program that never ends its title would hold back all later
		// output.
		{"t\x1b]0;" + strings.Repeat("x", 5000), 5005},
		{"t\x1b]0;" + strings.Repeat("x", 4000), 1},
	} {
		if got := escapeCompleteLen([]byte(tc.in)); got != tc.want {
			t.Errorf("escapeCompleteLen(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
