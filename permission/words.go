package permission

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// staticWord returns what bash makes of w when that needs no expansion
// (quotes removed, backslashes resolved, a leading ~ as home), and false
// when it does: a parameter, a substitution, arithmetic, a glob, braces,
// $'…' escapes.
func staticWord(w *syntax.Word, home string) (string, bool) {
	s, ok := staticPrefix(w, home)
	if !ok {
		return "", false
	}
	return s, true
}

// staticPrefix returns what bash makes of w up to its first part that
// needs expansion, and whether that was all of w (see staticWord).
func staticPrefix(w *syntax.Word, home string) (string, bool) {
	stop := expansionAt(w)
	var b strings.Builder
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && tildeWithMore(w) {
				return "", false
			}
			lim := len(p.Value)
			if stop.part == i {
				lim = stop.off
			}
			s, ok := unquotedLit(p.Value[:lim], i == 0, home)
			b.WriteString(s)
			if !ok || lim < len(p.Value) {
				return b.String(), false
			}
		case *syntax.SglQuoted:
			v, ok := p.Value, true
			if p.Dollar {
				v, ok = dollarQuoted(v)
			}
			if !ok {
				return b.String(), false
			}
			b.WriteString(v)
		case *syntax.DblQuoted:
			if p.Dollar {
				return b.String(), false
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return b.String(), false
				}
				b.WriteString(dquoteLit(lit.Value))
			}
		default:
			return b.String(), false
		}
	}
	return b.String(), true
}

// tildeWithMore reports whether w starts with a ~ that the parser split
// from what follows it (~"x", ~[): bash's tilde-prefix runs to the first
// unquoted slash, so it is ~user, or literal where quoted, never home.
func tildeWithMore(w *syntax.Word) bool {
	if len(w.Parts) < 2 {
		return false
	}
	first, ok := w.Parts[0].(*syntax.Lit)
	if !ok || first.Value != "~" {
		return false
	}
	next, ok := w.Parts[1].(*syntax.Lit)
	return !ok || !strings.HasPrefix(next.Value, "/")
}

// unquotedLit resolves an unquoted literal with no glob or brace
// expansion in it (see expansionAt): backslashes escape the next
// character; a leading ~ or ~/ is home. Where it is dynamic (~ unknown,
// ~user), the text is what comes before that (a ~ it cannot resolve is
// kept as written).
func unquotedLit(s string, first bool, home string) (string, bool) {
	if first && (s == "~" || strings.HasPrefix(s, "~/")) {
		if home == "" {
			return s, false
		}
		s = home + s[1:]
	} else if first && strings.HasPrefix(s, "~") {
		return s, false // ~user
	}
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// dquoteLit resolves backslashes in a double-quoted literal: only before
// $, `, ", \ and newline do they escape.
func dquoteLit(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// The placeholders of words only known when they run, each followed by
// the word's static start (what bash makes of it up to its first
// expansion: see dynamicStart): one that may become any number of words
// (unquoted $x), one that is exactly one word ("$x"), and a glob, any
// number of words that all start with its static start
// (globPrefix+"src/" for src/*.go).
const (
	dynamicWord = "\x00dynamic\x00"
	fieldWord   = "\x00field\x00"
	globPrefix  = "\x00glob:"
)

// isDynamic reports whether an argument is a placeholder.
func isDynamic(a string) bool { return strings.HasPrefix(a, "\x00") }

// splits reports whether a placeholder may become several words.
func splits(a string) bool {
	return strings.HasPrefix(a, dynamicWord) || strings.HasPrefix(a, globPrefix)
}

// mayBeOption reports whether a placeholder may become a word that
// starts with "-": any but a glob whose start is known not to (src/*.go,
// not *.go, which matches a file named -i.go).
func mayBeOption(a string) bool {
	if p, ok := strings.CutPrefix(a, globPrefix); ok {
		return p == "" || strings.HasPrefix(p, "-")
	}
	return isDynamic(a)
}

// argv resolves a call's words: the static ones, and placeholders for
// the others (see dynamicWord); known counts the static ones before the
// first placeholder.
func argv(words []*syntax.Word, home string) (args []string, known int) {
	args = make([]string, len(words))
	known = len(words)
	for i, w := range words {
		s, ok := staticPrefix(w, home)
		if !ok {
			if known == len(words) {
				known = i
			}
			if prefix, ok := globStart(w, home); ok {
				s = globPrefix + prefix
			} else if singleField(w) {
				s = fieldWord + s
			} else {
				s = dynamicWord + s
			}
		}
		args[i] = s
	}
	return args, known
}

// globStart returns what comes before the first pattern character of a
// word that is a glob and nothing else that expands (no parameter,
// substitution, braces or ~user).
func globStart(w *syntax.Word, home string) (string, bool) {
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") && p.Value != "~" && !strings.HasPrefix(p.Value, "~/") {
				return "", false
			}
			if hasBraces(p.Value) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				if _, ok := dollarQuoted(p.Value); !ok {
					return "", false
				}
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return "", false
				}
			}
		default:
			return "", false
		}
	}
	prefix, _ := staticPrefix(w, home)
	return prefix, true
}

// hasBraces reports whether an unquoted literal has a brace expansion.
func hasBraces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == '{' && braceExpands(s[i+1:]):
			return true
		}
	}
	return false
}

// dollarQuoted resolves the text of $'…' when its escapes are the simple
// ones (\t, \n, \\, \', …); ok is false for others (\x, \u, \c, octal),
// which are left to the word being only known when it runs.
func dollarQuoted(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		i++
		r, ok := simpleEscapes[s[i]]
		if !ok {
			return "", false
		}
		b.WriteByte(r)
	}
	return b.String(), true
}

// simpleEscapes are the escapes of $'…' that stand for one byte.
var simpleEscapes = map[byte]byte{'t': '\t', 'n': '\n', 'r': '\r', '\\': '\\', '\'': '\'', '"': '"', '?': '?',
	'a': '\a', 'b': '\b', 'e': 0x1b, 'E': 0x1b, 'f': '\f', 'v': '\v'}

// knownOf counts the words before args' first placeholder.
func knownOf(args []string) int {
	for i, a := range args {
		if isDynamic(a) {
			return i
		}
	}
	return len(args)
}

// singleField reports whether w is exactly one word once expanded: no
// part of it is split into words, globbed or brace-expanded ("$x",
// "a$(b)", not $x, "$@", *.go).
func singleField(w *syntax.Word) bool {
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if _, ok := unquotedLit(p.Value, i == 0, ""); !ok {
				return false
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if !quotedSingle(p) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// quotedSingle reports whether a double-quoted part stays one word: it
// has no "$@", "${a[@]}" or "${!prefix@}".
func quotedSingle(q *syntax.DblQuoted) bool {
	for _, p := range q.Parts {
		pe, ok := p.(*syntax.ParamExp)
		if !ok {
			continue
		}
		if pe.Names != 0 || pe.Param != nil && pe.Param.Value == "@" {
			return false
		}
		if w, ok := pe.Index.(*syntax.Word); ok && w.Lit() == "@" {
			return false
		}
	}
	return true
}

// braceExpands reports whether the text after a { makes a brace expansion:
// a closing } with a comma or .. before it.
func braceExpands(rest string) bool {
	end := strings.IndexByte(rest, '}')
	return end >= 0 && (strings.Contains(rest[:end], ",") || strings.Contains(rest[:end], ".."))
}

// dynamicStart is the static start of a placeholder argv made, and
// whether a is one.
func dynamicStart(a string) (string, bool) {
	for _, kind := range []string{dynamicWord, fieldWord, globPrefix} {
		if rest, ok := strings.CutPrefix(a, kind); ok {
			return rest, true
		}
	}
	return strings.CutPrefix(a, "\x00")
}

// commandText shows a simple command: its static words, then "…".
func commandText(args []string, known int) string {
	s := strings.Join(args[:known], " ")
	if known < len(args) {
		if s != "" {
			s += " "
		}
		s += "…"
	}
	return s
}
