package toolbash

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible is s as a person should read it in a question or a card title:
// every character a terminal or an editor would act on or not draw is
// written out as an escape, so that what the user approves is what runs.
// Control characters (C0 but tab and newline, DEL, C1: "\r", "\x1b"),
// format characters (bidirectional overrides and isolates, zero-width
// characters, U+FEFF: "\u202e"), line and paragraph separators, and bytes
// that are not UTF-8 ("\xff") are escaped; tabs, newlines and everything
// printable stay as they are. The command itself still runs as given.
func Visible(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case hidden(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsEscape reports whether Visible would change s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || hidden(r) {
			return true
		}
		i += n
	}
	return false
}

// hidden reports whether r acts on a display or is not drawn.
func hidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return true
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
}

// escapeRune writes r as Go would quote it.
func escapeRune(r rune) string {
	switch r {
	case '\r':
		return `\r`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\v':
		return `\v`
	}
	switch {
	case r < 0x80:
		return fmt.Sprintf(`\x%02x`, r)
	case r > 0xffff:
		return fmt.Sprintf(`\U%08x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}
