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
	var b strings.Builder
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			s, ok := unquotedLit(p.Value, i == 0, home)
			b.WriteString(s)
			if !ok {
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

// unquotedLit resolves an unquoted literal: backslashes escape the next
// character; glob and brace characters make it dynamic; a leading ~ or ~/
// is home. Where it is dynamic, the text is what comes before that (a ~
// it cannot resolve is kept as written).
func unquotedLit(s string, first bool, home string) (string, bool) {
	if first && (s == "~" || strings.HasPrefix(s, "~/")) {
		if home == "" {
			return s, false
		}
		s = home + s[1:]
	} else if first && strings.HasPrefix(s, "~") {
		return s, false // ~user
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == '*' || c == '?',
			c == '[' && strings.IndexByte(s[i+1:], ']') >= 0,
			c == '{' && braceExpands(s[i+1:]):
			return b.String(), false
		default:
			b.WriteByte(c)
		}
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

// The placeholders of words only known when they run: one that may
// become any number of words (unquoted $x, a glob), and one that is
// exactly one word ("$x").
const (
	dynamicWord = "\x00dynamic"
	fieldWord   = "\x00field"
)

// isDynamic reports whether an argument is a placeholder.
func isDynamic(a string) bool { return a == dynamicWord || a == fieldWord }

// argv resolves a call's words: the static ones, and placeholders for
// the others (see dynamicWord); known counts the static ones before the
// first placeholder.
func argv(words []*syntax.Word, home string) (args []string, known int) {
	args = make([]string, len(words))
	known = len(words)
	for i, w := range words {
		s, ok := staticWord(w, home)
		if !ok {
			if known == len(words) {
				known = i
			}
			s = dynamicWord
			if singleField(w) {
				s = fieldWord
			}
		}
		args[i] = s
	}
	return args, known
}

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
