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
			if p.Dollar {
				return b.String(), false
			}
			b.WriteString(p.Value)
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

// argv resolves a call's words: known counts the static ones before the
// first dynamic one, which is a NUL and then its static start (see
// dynamicStart): what bash makes of it up to its first expansion.
func argv(words []*syntax.Word, home string) (args []string, known int) {
	args = make([]string, len(words))
	known = len(words)
	for i, w := range words {
		s, ok := staticPrefix(w, home)
		if !ok {
			if known == len(words) {
				known = i
			}
			s = "\x00" + s
		}
		args[i] = s
	}
	return args, known
}

// dynamicStart is the static start of a dynamic word argv made, and
// whether a is one.
func dynamicStart(a string) (string, bool) {
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
