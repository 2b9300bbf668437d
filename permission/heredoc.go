package permission

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Where bash and the parser end a here-document differently, the lines
// between run as commands for one and are text for the other. With an
// unquoted delimiter bash joins a line ending in a backslash to the next
// before it compares the line with the delimiter (EO\ then F ends at
// <<EOF), and it reads $'…' in a delimiter as an ANSI-C string
// (<<$'E\x4fF' ends at EOF); the parser does neither. Such
// here-documents are asked about.

// heredocs checks the here-documents of f, parsed from src.
func (c *checker) heredocs(f *syntax.File, src string) {
	syntax.Walk(f, func(n syntax.Node) bool {
		if r, ok := n.(*syntax.Redirect); ok && (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) {
			c.heredoc(r, src)
		}
		return true
	})
}

// heredoc asks about a here-document bash may end elsewhere than the
// parser, and about ${x:-'…'} in its text (see dquoted).
func (c *checker) heredoc(r *syntax.Redirect, src string) {
	delim, quoted, ok := heredocDelim(r.Word)
	if !ok {
		c.unknowable("<<"+wordText(r.Word), "its here-document's delimiter is one bash may read differently from this checker")
		return
	}
	if quoted || r.Hdoc == nil {
		return
	}
	c.dquoted(r.Hdoc)
	start := bodyStart(src, int(r.Hdoc.Pos().Offset()))
	dash := r.Op == syntax.DashHdoc
	raw := heredocEnd(src[start:], delim, dash, false, false)
	if heredocEnd(src[start:], delim, dash, true, false) != raw || heredocEnd(src[start:], delim, dash, true, true) != raw {
		c.unknowable("<<"+delim, "a line of its here-document ends in a backslash, which bash joins to the next before it looks for the end")
	}
}

// bodyStart is where the line of a here-document's text at offset pos
// starts: the parser's text starts after the tabs <<- strips and the
// backslash-newlines before it.
func bodyStart(src string, pos int) int {
	for {
		for pos > 0 && src[pos-1] == '\t' {
			pos--
		}
		if pos < 2 || src[pos-2:pos] != "\\\n" {
			return strings.LastIndexByte(src[:pos], '\n') + 1
		}
		pos -= 2
	}
}

// heredocDelim is the delimiter a here-document's word makes, and whether
// it is quoted (its text is then not expanded); ok is false for a word
// bash may read otherwise than the parser ($'…', $"…", expansions, a
// backslash within double quotes).
func heredocDelim(w *syntax.Word) (delim string, quoted, ok bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			quoted = quoted || strings.Contains(p.Value, `\`)
			s, _ := unquotedLit(p.Value, false, "")
			b.WriteString(s)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false, false
			}
			quoted = true
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			lit, isLit := onlyLit(p)
			if p.Dollar || !isLit || strings.Contains(lit, `\`) {
				return "", false, false
			}
			quoted = true
			b.WriteString(lit)
		default:
			return "", false, false
		}
	}
	return b.String(), quoted, true
}

// onlyLit is the text of double quotes that hold only literal text.
func onlyLit(q *syntax.DblQuoted) (string, bool) {
	var b strings.Builder
	for _, p := range q.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		b.WriteString(lit.Value)
	}
	return b.String(), true
}

// heredocEnd is the offset in body (the text from a here-document's first
// line on) of the line that ends it, -1 if none: each line, its leading
// tabs stripped for <<-, compared with delim. With join, a line ending in
// a backslash (not itself escaped) is joined to the next first, as bash
// does; stripJoined strips the leading tabs of the joined lines too.
func heredocEnd(body, delim string, dash, join, stripJoined bool) int {
	for i := 0; i < len(body); {
		var line strings.Builder
		j := i
		for j < len(body) && body[j] != '\n' {
			switch {
			case join && body[j] == '\\' && j+1 < len(body) && body[j+1] == '\n':
				j += 2
				for stripJoined && dash && j < len(body) && body[j] == '\t' {
					j++
				}
			case join && body[j] == '\\' && j+1 < len(body):
				line.WriteString(body[j : j+2])
				j += 2
			default:
				line.WriteByte(body[j])
				j++
			}
		}
		l := line.String()
		if dash {
			l = strings.TrimLeft(l, "\t")
		}
		if l == delim {
			return i
		}
		i = j + 1
	}
	return -1
}

// defaultOps are the parameter expansions whose word, within double
// quotes, bash expands with single quotes as plain characters.
var defaultOps = map[syntax.ParExpOperator]bool{
	syntax.DefaultUnset: true, syntax.DefaultUnsetOrNull: true, syntax.AlternateUnset: true,
	syntax.AlternateUnsetOrNull: true, syntax.AssignUnset: true, syntax.AssignUnsetOrNull: true,
}

// dquoted asks about "${x:-'$(cmd)'}" (and the same in a here-document's
// text): there bash reads the single quotes as plain characters and runs
// the substitution they hold, where the parser reads a quoted string. So
// does "${x/a/'$(cmd)'}" at a compatibility level up to 4.2 (shopt -s
// compat42, BASH_COMPAT), which may be inherited: it is asked about too.
func (c *checker) dquoted(n syntax.Node) {
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false // quoted anew within
		case *syntax.ParamExp:
			if m.Exp != nil && m.Exp.Word != nil && defaultOps[m.Exp.Op] && quotesCode(m.Exp.Word) ||
				m.Repl != nil && (quotesCode(m.Repl.Orig) || quotesCode(m.Repl.With)) {
				c.unknowable("\"${…'…'}\"", "within double quotes bash may expand what single quotes in ${x:-'…'} or ${x/a/'…'} hold")
			}
		}
		return true
	})
}

// quotesCode reports whether w has single quotes holding a $ or `.
func quotesCode(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		if q, ok := p.(*syntax.SglQuoted); ok && strings.ContainsAny(q.Value, "$`") {
			return true
		}
	}
	return false
}
