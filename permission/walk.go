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

// parseAndCheck checks src as lang reads it: each node of its syntax
// tree, once what holds across the whole script is known (the variables
// it sets to numbers, whether it changes directory, its integer
// variables).
func (c *checker) parseAndCheck(src string, depth int, lang syntax.LangVariant) {
	f := c.parse(src, depth, lang)
	if f == nil {
		return
	}
	c.modes(f, src, depth)
	c.heredocs(f, src)
	c.allexportScript(f, depth)
	vars := varSafety{}
	vars.scan(f)
	if changesDir(f, c.p.Home) {
		c.dirChanged()
	}
	c.ints = integerVars(f)
	syntax.Walk(f, func(n syntax.Node) bool {
		c.arith(n, vars)
		c.node(n, vars, depth)
		return true
	})
}

// parse reads src as lang does. It asks, and returns nil, when src
// cannot be read as bash will read it: strings nested too deeply, source
// bash and the parser read differently, or source that does not parse.
func (c *checker) parse(src string, depth int, lang syntax.LangVariant) *syntax.File {
	if depth > maxDepth {
		c.unknowable(src, "it runs strings within strings too deeply to follow")
		return nil
	}
	if why := misread(src); why != "" {
		c.unknowable(src, why)
		return nil
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
	if err != nil {
		c.unknowable(src, fmt.Sprintf("it does not parse as bash (%v)", err))
		return nil
	}
	return f
}

// arith asks about each arithmetic expression n evaluates that reads a
// variable the script does not set to a number: its value would be
// evaluated in turn, and can run commands.
func (c *checker) arith(n syntax.Node, vars varSafety) {
	for _, e := range arithRoots(n) {
		if v := vars.unsafeArith(e); v != "" {
			c.unknowable(v, fmt.Sprintf("it evaluates %s as arithmetic, which runs any command its value holds", v))
		}
	}
}

// node checks one node of the syntax tree for what it runs, the
// variables it sets and the files it writes; the walk reaches the nodes
// within it in turn.
func (c *checker) node(n syntax.Node, vars varSafety, depth int) {
	switch n := n.(type) {
	case *syntax.BinaryArithm, *syntax.UnaryArithm:
		c.arithAssign(n)
	case *syntax.CmdSubst, *syntax.ProcSubst:
		c.substitution(n)
	case *syntax.ParamExp:
		c.paramExp(n, vars)
	case *syntax.WordIter:
		c.loopVar(n)
	case *syntax.CallExpr:
		c.callExpr(n, depth)
	case *syntax.DeclClause:
		c.declare(n)
	case *syntax.Redirect:
		c.redirect(n)
		c.varRedirect(n)
	case *syntax.Stmt:
		c.adjacentVarRedirect(n)
	case *syntax.DblQuoted:
		c.dquoted(n)
	}
}

// substitution asks about a command or process substitution that holds
// a here-document, which bash may end before the parser does.
func (c *checker) substitution(n syntax.Node) {
	if hasHeredoc(n) {
		c.unknowable("$(… <<…)", "it has a here-document inside a substitution, which bash may end early")
	}
}

// callExpr checks a simple command: the assignments before it, then the
// command, if it has one.
func (c *checker) callExpr(n *syntax.CallExpr, depth int) {
	if len(n.Args) > 0 {
		c.envAssigns(withoutIFS(n.Assigns), depth) // X=1 cmd: in cmd's environment
		c.intAssigns(n.Assigns)
	} else {
		c.assigns(n.Assigns)
	}
	if words := c.keywordAssigns(n.Args); len(words) > 0 {
		args, known := argv(words, c.p.Home)
		c.call(args, known, depth)
	}
}

// withoutIFS leaves out an assignment to IFS before a command (IFS= read
// -r line): it splits only what that command splits, the words of the
// line being expanded before it, and a shell bash starts resets it.
func withoutIFS(as []*syntax.Assign) []*syntax.Assign {
	var out []*syntax.Assign
	for _, a := range as {
		if a.Name == nil || a.Name.Value != "IFS" {
			out = append(out, a)
		}
	}
	return out
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

// call checks one simple command: its name, what it does to the shell
// itself, what it runs in turn, and then the command by the rules. A
// command that only passes another on (a wrapper, eval, bash -c) answers
// only to the rules that name it, not to Policy.Unmatched, unless it
// runs the command with other rights (sudo).
func (c *checker) call(args []string, known, depth int) {
	text := commandText(args, known)
	if why := unknownName(args, known); why != "" {
		c.unknowable(text, why)
		return
	}
	if args[0] == "--" && known > 1 {
		// time -- cmd: bash's time keyword takes -- before its command,
		// which the parser leaves in the command's words.
		c.call(args[1:], known-1, depth)
	}
	base := path.Base(args[0])
	c.shellEffects(base, args, known)
	c.gitDirOperand(base, args, known)
	if c.runs(base, args, known, depth) {
		c.rules(args, known, text, wrappers[base].escalates || raisesPriority(base, args, known))
		return
	}
	c.matchCommand(base, args, known, text, depth)
}

// unknownName says why a command's name cannot be checked ("" when it
// can): it is only known when it runs, or it has non-ASCII letters, which
// may make it look like another.
func unknownName(args []string, known int) string {
	if known == 0 {
		return "its command name is only known when it runs"
	}
	if !isASCII(args[0]) {
		return fmt.Sprintf("its command name %q has non-ASCII letters (a look-alike?)", args[0])
	}
	return ""
}

// shellEffects checks what a command does to the shell that runs it: cd,
// pushd and popd change the directory later relative writes go to; read,
// mapfile and printf -v fill variables; test -v evaluates a subscript.
func (c *checker) shellEffects(base string, args []string, known int) {
	if base == "cd" || base == "pushd" || base == "popd" {
		c.dirChanged()
	}
	c.fills(base, args, known)
	if base == "test" || base == "[" {
		c.testV(args, known)
	}
	if base == "shopt" {
		c.compat(args, known)
	}
}

// isASCII reports whether s has only ASCII characters.
func isASCII(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII {
			return false
		}
	}
	return true
}
