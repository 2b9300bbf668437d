package permission

import "strings"

// sedReadOnly: sed without -i or -f, whose scripts (the -e values, else
// the first operand) only read: no e, w or W command, no s///e or s///w.
func sedReadOnly(l *roLine) bool {
	scripts := append(l.opts["-e"], l.opts["--expression"]...)
	if len(scripts) == 0 {
		if len(l.operands) == 0 {
			return false
		}
		scripts = l.operands[:1]
	}
	for _, s := range scripts {
		if isDynamic(s) || !sedScriptReads(s) {
			return false
		}
	}
	return true
}

// sedScriptReads reports whether a sed script only reads: each of its
// commands, after its address, is one that prints, moves text between
// the spaces, branches or quits, or an s or y whose flags write nothing
// and run nothing. A script it cannot read is not known to only read.
func sedScriptReads(s string) bool {
	r := &sedReader{s: s}
	for {
		r.skip(" \t\n;")
		if r.done() {
			return true
		}
		if !r.address() {
			return false
		}
		r.skip(" \t")
		if r.peek() == '!' {
			r.i++
			r.skip(" \t")
		}
		if r.done() || !r.command() {
			return false
		}
	}
}

// sedReader reads a sed script.
type sedReader struct {
	s string
	i int
}

func (r *sedReader) done() bool { return r.i >= len(r.s) }

func (r *sedReader) peek() byte {
	if r.done() {
		return 0
	}
	return r.s[r.i]
}

func (r *sedReader) skip(set string) {
	for !r.done() && strings.IndexByte(set, r.s[r.i]) >= 0 {
		r.i++
	}
}

// address reads an optional address or range: N, $, /re/, \cREc,
// first~step, and after a comma the same or +N, ~N.
func (r *sedReader) address() bool {
	if !r.oneAddress() {
		return false
	}
	if r.peek() == ',' {
		r.i++
		r.skip(" \t")
		if c := r.peek(); c == '+' || c == '~' {
			r.i++
		}
		return r.oneAddress()
	}
	return true
}

func (r *sedReader) oneAddress() bool {
	switch c := r.peek(); {
	case c >= '0' && c <= '9':
		r.skip("0123456789~")
	case c == '$':
		r.i++
	case c == '/':
		r.i++
		if !r.delimited('/') {
			return false
		}
		r.skip("IM")
	case c == '\\':
		if r.i+1 >= len(r.s) {
			return false
		}
		d := r.s[r.i+1]
		r.i += 2
		if !r.delimited(d) {
			return false
		}
		r.skip("IM")
	}
	return true
}

// delimited skips to just past the next unescaped d.
func (r *sedReader) delimited(d byte) bool {
	for ; !r.done(); r.i++ {
		switch r.s[r.i] {
		case '\\':
			r.i++
		case d:
			r.i++
			return true
		case '\n':
			return false
		}
	}
	return false
}

// label skips a label (of :, b, t, T) or v's version: GNU sed ends it at
// whitespace or a ;, and reads what follows as the next command (:a e cmd
// runs cmd).
func (r *sedReader) label() {
	r.skip(" \t")
	for !r.done() && strings.IndexByte(" \t\n;", r.s[r.i]) < 0 {
		r.i++
	}
}

// command reads one command; false for one that writes or runs, or one
// it does not know.
func (r *sedReader) command() bool {
	c := r.s[r.i]
	r.i++
	switch {
	case strings.IndexByte("{}=dDgGhHlnNpPxzF", c) >= 0:
		return true
	case strings.IndexByte("qQlL", c) >= 0:
		r.skip(" \t0123456789")
		return true
	case c == ':' || c == 'b' || c == 't' || c == 'T' || c == 'v':
		r.label()
		return true
	case c == 'a' || c == 'i' || c == 'c':
		r.toLine()
		return true
	case c == '#':
		r.toLine()
		return true
	case c == 'r' || c == 'R':
		r.toLine() // reads a file into the output
		return true
	case c == 's':
		return r.substitute()
	case c == 'y':
		if r.done() {
			return false
		}
		d := r.s[r.i]
		r.i++
		return r.delimited(d) && r.delimited(d)
	}
	return false // e, w, W and anything unknown
}

// toLine skips to the end of the line (texts and file names hold ;).
func (r *sedReader) toLine() {
	for !r.done() && r.s[r.i] != '\n' {
		r.i++
	}
}

// substitute reads s/re/replacement/flags; the e and w flags run or write.
func (r *sedReader) substitute() bool {
	if r.done() {
		return false
	}
	d := r.s[r.i]
	r.i++
	if d == '\n' || d == '\\' || !r.delimited(d) || !r.delimited(d) {
		return false
	}
	for !r.done() {
		switch c := r.s[r.i]; {
		case c == 'e' || c == 'w' || c == 'W':
			return false
		case strings.IndexByte("gpiImM0123456789", c) >= 0:
			r.i++
		default:
			return strings.IndexByte("; \t\n}#", c) >= 0 // else not a flag sed knows
		}
	}
	return true
}
