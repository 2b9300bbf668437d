package permission

import "mvdan.cc/sh/v3/syntax"

// Bash expands braces and globs over a whole word, its quoted parts
// included: in {--pre=zap,"x"} the comma and the braces are unquoted, and
// the word becomes two (--pre=zap x); in ["-"]-pre=zap the brackets are,
// and the word matches a file named --pre=zap. So where a word expands
// is found across its parts, not within each literal.

// wordChar is one character of a word as brace and glob expansion see
// it: quoted (within quotes, after a backslash, or an expansion's value)
// or not, and where it is, for an unquoted one.
type wordChar struct {
	ch        byte // 0 for a parameter, substitution or other expansion
	quoted    bool
	part, off int // its part of the word, and its offset in that literal
}

// expansionStop is where a word's first brace or glob expansion starts:
// its part and offset within that literal; part is -1 when there is none.
type expansionStop struct{ part, off int }

// expansionAt finds the first unquoted character of w that starts a
// brace expansion ({ with a , or .. before a later unquoted }) or a glob
// (*, ?, or [ with a ] after it). It errs toward finding one: a quoted
// comma or .. counts, and so does any ] after a [.
func expansionAt(w *syntax.Word) expansionStop {
	chars := wordChars(w)
	for i, c := range chars {
		if c.quoted {
			continue
		}
		switch {
		case c.ch == '*' || c.ch == '?',
			c.ch == '[' && hasChar(chars[i+1:], ']'),
			c.ch == '{' && bracesExpand(chars[i+1:]):
			return expansionStop{c.part, c.off}
		}
	}
	return expansionStop{-1, 0}
}

// wordChars lists w's characters as expansion sees them.
func wordChars(w *syntax.Word) []wordChar {
	var out []wordChar
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			out = litChars(out, p.Value, i)
		case *syntax.SglQuoted:
			out = quotedChars(out, p.Value, i)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					out = quotedChars(out, lit.Value, i)
				} else {
					out = append(out, wordChar{quoted: true, part: i})
				}
			}
		default:
			out = append(out, wordChar{quoted: true, part: i})
		}
	}
	return out
}

// litChars appends an unquoted literal's characters: a backslash quotes
// the next one.
func litChars(out []wordChar, s string, part int) []wordChar {
	for j := 0; j < len(s); j++ {
		if s[j] == '\\' && j+1 < len(s) {
			out = append(out, wordChar{ch: s[j+1], quoted: true, part: part, off: j})
			j++
			continue
		}
		out = append(out, wordChar{ch: s[j], part: part, off: j})
	}
	return out
}

// quotedChars appends quoted characters.
func quotedChars(out []wordChar, s string, part int) []wordChar {
	for j := 0; j < len(s); j++ {
		out = append(out, wordChar{ch: s[j], quoted: true, part: part})
	}
	return out
}

// hasChar reports whether chars hold ch, quoted or not.
func hasChar(chars []wordChar, ch byte) bool {
	for _, c := range chars {
		if c.ch == ch {
			return true
		}
	}
	return false
}

// bracesExpand reports whether the characters after an unquoted { make
// a brace expansion: an unquoted } with a comma or .. (quoted or not)
// before it.
func bracesExpand(rest []wordChar) bool {
	seen := false
	for i, c := range rest {
		switch {
		case c.ch == ',', c.ch == '.' && i+1 < len(rest) && rest[i+1].ch == '.':
			seen = true
		case c.ch == '}' && !c.quoted && seen:
			return true
		}
	}
	return false
}
