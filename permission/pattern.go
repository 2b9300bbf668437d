package permission

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pattern writes words as a rule's pattern that matches exactly them:
// NewRule reads it back to the same words, each matching only itself.
// A word is quoted where the shell would read it otherwise (print(1),
// a b, ~, #1); its glob characters and a leading ! (an exclusion) are
// escaped; control and invisible characters are written as $'\u…'.
func Pattern(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		w = escapeGlob(w)
		if strings.HasPrefix(w, "!") {
			w = `\` + w
		}
		q[i] = QuoteWord(w)
	}
	return strings.Join(q, " ")
}

// QuoteWord quotes s as one shell word: as it is when every character is
// plain (letters, digits, @%+,:=./_-); else in single quotes; else, when s
// holds a character a terminal would act on or hide, as $'…' with escapes.
func QuoteWord(s string) string {
	switch {
	case s != "" && strings.IndexFunc(s, notPlain) < 0:
		return s
	case strings.IndexFunc(s, unseen) < 0 && utf8.ValidString(s):
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return dollarQuote(s)
}

// notPlain reports whether r needs quoting in a shell word.
func notPlain(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("@%+,:=./_-", r)
}

// unseen reports whether r is a character a terminal would act on
// (control characters) or not show (format characters, such as
// bidirectional overrides and zero-width spaces).
func unseen(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError ||
		unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
}

// dollarQuote writes s as $'…', every unseen character or invalid byte as
// an escape.
func dollarQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unseen(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unseen(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case unseen(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}
