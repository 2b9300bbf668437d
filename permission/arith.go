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

// identRE matches a variable name.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// scan records the script's assignments.
func (vs varSafety) scan(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			vs.assign(n)
		case *syntax.BinaryArithm, *syntax.UnaryArithm:
			vs.arithAssign(n)
		case *syntax.CallExpr:
			vs.readersOf(n)
		case *syntax.WordIter:
			vs.loopVar(n)
		}
		return true
	})
}

// assign notes an assignment: safe when it gives no value (export x) or
// a number.
func (vs varSafety) assign(n *syntax.Assign) {
	if n.Name != nil {
		vs.note(n.Name.Value, n.Value == nil && n.Array == nil || n.Value != nil && safeValue(n.Value))
	}
}

// arithAssign notes a variable arithmetic assigns (x=1, x+=y, x++): safe,
// its value being the number the expression computes.
func (vs varSafety) arithAssign(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.BinaryArithm:
		if w, ok := n.X.(*syntax.Word); ok && isAssignOp(n.Op) {
			if name := w.Lit(); identRE.MatchString(name) {
				vs.note(name, true)
			}
		}
	case *syntax.UnaryArithm:
		if w, ok := n.X.(*syntax.Word); ok && (n.Op == syntax.Inc || n.Op == syntax.Dec) {
			vs.note(w.Lit(), true)
		}
	}
}

// loopVar notes a for loop's variable: safe when every item is a number.
func (vs varSafety) loopVar(n *syntax.WordIter) {
	if n.Name == nil {
		return
	}
	safe := n.InPos.IsValid()
	for _, w := range n.Items {
		safe = safe && safeValue(w)
	}
	vs.note(n.Name.Value, safe)
}

// note records one assignment to name; a variable stays safe only while
// every assignment to it is.
func (vs varSafety) note(name string, safe bool) {
	if prev, ok := vs[name]; ok {
		safe = safe && prev
	}
	vs[name] = safe
}

// readersOf marks the variables that read, mapfile, getopts and printf -v
// fill from outside (see filledNames).
func (vs varSafety) readersOf(c *syntax.CallExpr) {
	if len(c.Args) == 0 {
		return
	}
	args, known := argv(c.Args, "")
	if known == 0 {
		return
	}
	names, _ := filledNames(args[0], args, known)
	for _, n := range names {
		if identRE.MatchString(n) {
			vs.note(n, false)
		}
	}
}

// safeValue reports whether an assigned word holds no code for a later
// arithmetic: a number (a name would be evaluated in turn).
func safeValue(w *syntax.Word) bool {
	s, ok := staticWord(w, "")
	return ok && numberRE.MatchString(s)
}

// numberRE matches the numbers bash reads in arithmetic: decimal, hex,
// octal and base#digits.
var numberRE = regexp.MustCompile(`^[-+]?(0[xX][0-9a-fA-F]+|[0-9]+(#[0-9a-zA-Z@_]+)?)$`)

// bashNumbers are variables bash itself sets to numbers.
var bashNumbers = map[string]bool{"RANDOM": true, "SRANDOM": true, "SECONDS": true, "LINENO": true,
	"BASHPID": true, "PPID": true, "UID": true, "EUID": true, "EPOCHSECONDS": true, "OPTIND": true}

// isAssignOp reports whether op assigns its left operand (=, +=, …).
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
		roots := []syntax.ArithmExpr{n.Index}
		if n.Slice != nil {
			roots = append(roots, n.Slice.Offset, n.Slice.Length)
		}
		return roots
	case *syntax.Assign:
		return []syntax.ArithmExpr{n.Index}
	case *syntax.ArrayElem:
		return []syntax.ArithmExpr{n.Index}
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet {
			return []syntax.ArithmExpr{asArithm(n.X)} // [[ -v a[i] ]] evaluates i
		}
	case *syntax.BinaryTest:
		if n.Op >= syntax.TsEql && n.Op <= syntax.TsGtr {
			return []syntax.ArithmExpr{asArithm(n.X), asArithm(n.Y)}
		}
	}
	return nil
}

// asArithm is a test operand as the arithmetic expression bash evaluates
// it as, when it is a word.
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
		case *syntax.CmdSubst, *syntax.ProcSubst:
			found = "the output of $(…)" // evaluated as an expression in turn
			return false
		case *syntax.Word:
			found = vs.unsafeWord(n)
		case *syntax.ParamExp:
			if n.Param != nil && !vs.safe(n.Param.Value) && !isNumberParam(n.Param.Value) {
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
		name, sub, indexed := strings.Cut(lit, "[")
		switch {
		case identRE.MatchString(name) && !vs.safe(name):
			return name
		case indexed && !numberRE.MatchString(strings.TrimSuffix(sub, "]")):
			return lit // a subscript is an expression too
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

// safe reports whether name holds a number the script set, or bash did.
func (vs varSafety) safe(name string) bool { return vs[name] || bashNumbers[name] }
