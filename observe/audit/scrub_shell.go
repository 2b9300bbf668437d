package audit

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxDepth bounds how deep strings are parsed again as commands
// (bash -c '… bash -c "…" …').
const maxDepth = 3

// piece is a literal run of a word (or a comment): its text and where it
// is in the source. exact says the text is the source there byte for
// byte; otherwise (a line continuation, a here-document's delimiter)
// redacting any of it redacts all of [off, end). A hole is an expansion,
// which is never redacted. quoted says the piece was in quotes (or is an
// argument with a blank in it).
type piece struct {
	text          string
	off, end      int
	exact, quoted bool
	hole          bool
}

// word is one word of a command: its pieces, and their text, an expansion
// standing as a NUL.
type word struct {
	text   string
	pieces []piece
}

// shell parses text, found at base in the source, as a bash command and
// collects what to redact in it. It reports false when text does not
// parse.
func (s *scrubber) shell(text string, base, depth int) bool {
	f, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(text), "")
	if err != nil {
		return false
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			s.assign(n, text, base)
		case *syntax.CallExpr:
			s.call(n, text, base, depth)
		case *syntax.Lit, *syntax.SglQuoted, *syntax.Comment:
			if p, ok := literal(n, text, base); ok {
				s.text(p, false)
			}
		}
		return true
	})
	return true
}

// assign redacts the value given to a variable with a secret's name.
func (s *scrubber) assign(a *syntax.Assign, text string, base int) {
	if a.Name == nil || !secretName(a.Name.Value) {
		return
	}
	if a.Value != nil {
		s.redactFrom(wordOf(a.Value, text, base), 0)
	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			if e.Value != nil {
				s.redactFrom(wordOf(e.Value, text, base), 0)
			}
		}
	}
}

// call applies the rules of a command's words, and parses again each
// quoted string as a command (bash -c '…', eval "…", ssh host '…').
func (s *scrubber) call(c *syntax.CallExpr, text string, base, depth int) {
	words := make([]word, len(c.Args))
	for i, w := range c.Args {
		words[i] = wordOf(w, text, base)
		if len(w.Parts) == 1 && depth < maxDepth {
			if p := words[i].pieces; len(p) == 1 && p[0].exact && isQuoted(w.Parts[0]) {
				s.shell(p[0].text, p[0].off, depth+1)
			}
		}
	}
	s.args(words)
}

// isQuoted reports whether a word part is a quoted string with no
// expansion in it.
func isQuoted(part syntax.WordPart) bool {
	switch p := part.(type) {
	case *syntax.SglQuoted:
		return !p.Dollar
	case *syntax.DblQuoted:
		if len(p.Parts) != 1 {
			return false
		}
		_, lit := p.Parts[0].(*syntax.Lit)
		return lit
	}
	return false
}

// wordOf is a parsed word's pieces, at base in the source.
func wordOf(w *syntax.Word, text string, base int) word {
	var out word
	var b strings.Builder
	for _, part := range w.Parts {
		parts := []syntax.Node{part}
		dq, quoted := part.(*syntax.DblQuoted)
		if quoted {
			parts = parts[:0]
			for _, p := range dq.Parts {
				parts = append(parts, p)
			}
		}
		_, sq := part.(*syntax.SglQuoted)
		for _, n := range parts {
			p, ok := literal(n, text, base)
			if !ok {
				p = piece{hole: true, text: "\x00"}
			}
			p.quoted = quoted || sq
			out.pieces = append(out.pieces, p)
			b.WriteString(p.text)
		}
	}
	out.text = b.String()
	return out
}

// literal is the piece of a literal node (a Lit, a single-quoted string,
// a comment); ok is false for any other node.
func literal(n syntax.Node, text string, base int) (p piece, ok bool) {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	switch n := n.(type) {
	case *syntax.Lit:
		p.text = n.Value
	case *syntax.SglQuoted:
		p.text = n.Value
		start++ // the quote
		if n.Dollar {
			start++
		}
		end--
	case *syntax.Comment:
		p.text = n.Text
		start++ // the #
	default:
		return p, false
	}
	end = max(start, min(end, len(text)))
	p.off, p.end = base+start, base+end
	p.exact = start+len(p.text) <= len(text) && text[start:start+len(p.text)] == p.text
	return p, true
}

// redactFrom redacts the literal pieces of w from its text's byte i on.
func (s *scrubber) redactFrom(w word, i int) {
	s.redactRange(w, i, len(w.text))
}

// redactRange redacts the literal pieces of w within [from, to) of its
// text.
func (s *scrubber) redactRange(w word, from, to int) {
	at := 0
	for _, p := range w.pieces {
		n := len(p.text)
		lo, hi := max(from-at, 0), min(to-at, n)
		if !p.hole && lo < hi {
			if p.exact {
				s.add(p.off+lo, p.off+hi)
			} else {
				s.add(p.off, p.end)
			}
		}
		at += n
	}
}
