package permission

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash evaluates a variable's value as an expression in arithmetic (and in
// array subscripts, and on both sides of [[ -eq ]]), and an expression can
// run a command through a subscript: x='a[$(rm -rf ~)]'; echo $((x)). So
// arithmetic over a variable is allowed only when the command itself
// assigns it, only values that hold no code.

// varSafety says, per variable name, whether every assignment the script
// makes to it is safe (false once one is not).
type varSafety map[string]bool

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// readers assign what they read to the variables named in their arguments.
var readers = map[string]bool{"read": true, "mapfile": true, "readarray": true, "getopts": true}

// scan records the script's assignments.
func (vs varSafety) scan(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil {
				vs.note(n.Name.Value, n.Value == nil && n.Array == nil || n.Value != nil && safeValue(n.Value))
			}
		case *syntax.BinaryArithm:
			if w, ok := n.X.(*syntax.Word); ok && isAssignOp(n.Op) {
				if name := w.Lit(); identRE.MatchString(name) {
					vs.note(name, true) // its value is what the expression computes
				}
			}
		case *syntax.UnaryArithm:
			if w, ok := n.X.(*syntax.Word); ok && (n.Op == syntax.Inc || n.Op == syntax.Dec) {
				vs.note(w.Lit(), true)
			}
		case *syntax.CallExpr:
			vs.readersOf(n)
		}
		return true
	})
}

func (vs varSafety) note(name string, safe bool) {
	if prev, ok := vs[name]; ok {
		safe = safe && prev
	}
	vs[name] = safe
}

// readersOf marks the variables that read, mapfile, getopts and printf -v
// fill from outside.
func (vs varSafety) readersOf(c *syntax.CallExpr) {
	if len(c.Args) == 0 {
		return
	}
	name := c.Args[0].Lit()
	for i, a := range c.Args[1:] {
		lit := a.Lit()
		switch {
		case readers[name] && identRE.MatchString(lit):
			vs.note(lit, false)
		case name == "printf" && i+2 < len(c.Args) && lit == "-v":
			vs.note(c.Args[i+2].Lit(), false)
		}
	}
}

// safeValue reports whether an assigned word holds no code: it is static
// and has no $ or backquote (which a later arithmetic would run).
func safeValue(w *syntax.Word) bool {
	s, ok := staticWord(w, "")
	return ok && !strings.ContainsAny(s, "$`")
}

func isAssignOp(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
		syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
		return true
	}
	return false
}

// arithRoots are the arithmetic expressions a node evaluates.
func arithRoots(n syntax.Node) []syntax.ArithmExpr {
	switch n := n.(type) {
	case *syntax.ArithmExp:
		return []syntax.ArithmExpr{n.X}
	case *syntax.ArithmCmd:
		return []syntax.ArithmExpr{n.X}
	case *syntax.CStyleLoop:
		return []syntax.ArithmExpr{n.Init, n.Cond, n.Post}
	case *syntax.LetClause:
		return n.Exprs
	case *syntax.ParamExp:
		return []syntax.ArithmExpr{n.Index}
	case *syntax.Assign:
		return []syntax.ArithmExpr{n.Index}
	case *syntax.BinaryTest:
		if n.Op >= syntax.TsEql && n.Op <= syntax.TsGtr {
			return []syntax.ArithmExpr{asArithm(n.X), asArithm(n.Y)}
		}
	}
	return nil
}

func asArithm(e syntax.TestExpr) syntax.ArithmExpr {
	if w, ok := e.(*syntax.Word); ok {
		return w
	}
	return nil
}

// unsafeArith returns a variable an arithmetic expression evaluates whose
// value the script does not set safely ("" for none).
func (vs varSafety) unsafeArith(e syntax.ArithmExpr) string {
	if e == nil {
		return ""
	}
	found := ""
	syntax.Walk(e, func(n syntax.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.Word:
			found = vs.unsafeWord(n)
		case *syntax.ParamExp:
			if n.Param != nil && !vs[n.Param.Value] && !isNumberParam(n.Param.Value) {
				found = "$" + n.Param.Value
			}
		}
		return true
	})
	return found
}

// isNumberParam: $1, $#, $? and the like hold no code... except $1, which
// the command sets; positional parameters are empty in bash -c.
func isNumberParam(p string) bool { return p == "#" || p == "?" || p == "$" || p == "!" }

// unsafeWord checks one word of an arithmetic expression: a variable the
// script does not set safely (a[i] counts as a), or a quoted string that
// could hold code.
func (vs varSafety) unsafeWord(w *syntax.Word) string {
	if lit := w.Lit(); lit != "" {
		name, _, _ := strings.Cut(lit, "[")
		if identRE.MatchString(name) && !vs[name] {
			return name
		}
		return ""
	}
	for _, p := range w.Parts {
		switch p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			if s, ok := staticWord(w, ""); !ok || strings.ContainsAny(s, "$`[") {
				return "a quoted string"
			}
		}
	}
	return ""
}
