package permission

import (
	"fmt"
	"path"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
)

// maxDepth bounds the strings parsed again (eval, bash -c, …) within one
// another.
const maxDepth = 8

// script parses a command (or a string bash would run) and checks it.
func (c *checker) script(src string, depth int) { c.scriptIn(src, depth, syntax.LangBash) }

// scriptIn checks src as each of the shell languages given would read it.
func (c *checker) scriptIn(src string, depth int, langs ...syntax.LangVariant) {
	for _, lang := range langs {
		c.parseAndCheck(src, depth, lang)
	}
}

func (c *checker) parseAndCheck(src string, depth int, lang syntax.LangVariant) {
	if depth > maxDepth {
		c.unknowable(src, "it runs strings within strings too deeply to follow")
		return
	}
	if why := misread(src); why != "" {
		c.unknowable(src, why)
		return
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
	if err != nil {
		c.unknowable(src, fmt.Sprintf("it does not parse as bash (%v)", err))
		return
	}
	vars := varSafety{}
	vars.scan(f)
	c.changesDir = c.changesDir || changesDir(f, c.p.Home)
	c.ints = integerVars(f)
	syntax.Walk(f, func(n syntax.Node) bool {
		for _, e := range arithRoots(n) {
			if v := vars.unsafeArith(e); v != "" {
				c.unknowable(v, fmt.Sprintf("it evaluates %s as arithmetic, which runs any command its value holds", v))
			}
		}
		switch n := n.(type) {
		case *syntax.BinaryArithm:
			if w, ok := n.X.(*syntax.Word); ok && isAssignOp(n.Op) {
				c.setsVar(w.Lit())
			}
		case *syntax.UnaryArithm:
			if w, ok := n.X.(*syntax.Word); ok && (n.Op == syntax.Inc || n.Op == syntax.Dec) {
				c.setsVar(w.Lit())
			}
		case *syntax.CmdSubst, *syntax.ProcSubst:
			if hasHeredoc(n) {
				c.unknowable("$(… <<…)", "it has a here-document inside a substitution, which bash may end early")
			}
		case *syntax.ParamExp:
			c.paramExp(n, vars)
		case *syntax.WordIter:
			if n.Name != nil && dangerousVar(n.Name.Value) {
				c.unknowable("for "+n.Name.Value, fmt.Sprintf("its loop sets %s, which changes what commands run", n.Name.Value))
			}
		case *syntax.CallExpr:
			c.assigns(n.Assigns)
			if len(n.Args) > 0 {
				args, known := argv(n.Args, c.p.Home)
				c.call(args, known, depth)
			}
		case *syntax.DeclClause:
			c.declare(n)
		case *syntax.Redirect:
			c.redirect(n)
		}
		return true
	})
}

// misread reports source that bash and the parser read differently: a
// backslash before a carriage return, and a comment ending in a backslash
// (bash ends a comment at the newline; the parser continues the line).
func misread(src string) string {
	if strings.Contains(src, "\\\r") {
		return "it has a backslash before a carriage return, which bash reads differently"
	}
	for _, line := range strings.Split(src, "\n") {
		if strings.Contains(line, "#") && strings.HasSuffix(line, "\\") {
			return "a line with a comment ends in a backslash, which bash reads differently"
		}
	}
	return ""
}

// hasHeredoc reports whether a substitution holds a here-document.
func hasHeredoc(n syntax.Node) bool {
	found := false
	syntax.Walk(n, func(m syntax.Node) bool {
		if r, ok := m.(*syntax.Redirect); ok && (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) {
			found = true
		}
		return !found
	})
	return found
}

// call checks one simple command, and what it runs in turn.
func (c *checker) call(args []string, known, depth int) {
	text := commandText(args, known)
	if known == 0 {
		c.unknowable(text, "its command name is only known when it runs")
		return
	}
	name := args[0]
	if !isASCII(name) {
		c.unknowable(text, fmt.Sprintf("its command name %q has non-ASCII letters (a look-alike?)", name))
		return
	}
	base := path.Base(name)
	if base == "cd" || base == "pushd" || base == "popd" {
		c.changesDir = true
	}
	c.fills(base, args, known)
	if base == "test" || base == "[" {
		c.testV(args, known)
	}
	if c.runs(base, args, known, depth) {
		c.rules(args, known, text, wrappers[base].escalates) // else only rules naming the wrapper itself
		return
	}
	if base == "git" {
		args, known = c.gitArgs(args, known)
	}
	c.rules(args, known, text, true)
}

func isASCII(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII {
			return false
		}
	}
	return true
}
