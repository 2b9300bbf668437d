package permission

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
)

// Policy is a set of rules and what applies to a command none matches.
// The zero Policy allows every command that can be read statically:
// callers with no rules configured do not check at all.
type Policy struct {
	Rules []Rule
	// Unmatched is the decision for a simple command no rule matches (Ask
	// where rules are configured).
	Unmatched Decision
	// Home is what ~ means; empty makes ~ unknown (ask).
	Home string
}

// Verdict is the decision on a whole command, and why.
type Verdict struct {
	Decision Decision
	// Rule is the rule that decided, when one did.
	Rule *Rule
	// Command is the simple command (its words) the decision is about.
	Command string
	// Reason says why, in words for the model and the user.
	Reason string
	// Prefixes are, for Ask, the narrowest argv prefixes that, allowed,
	// would have let the command run (empty when no prefix rule could:
	// the ask comes from what cannot be known statically).
	Prefixes []string
}

// maxDepth bounds the strings parsed again (eval, bash -c, …) within one
// another.
const maxDepth = 8

// Check decides on command, which runs in workdir for a session whose
// workspace is workspace (writes outside it are asked about; empty: not
// checked).
func (p *Policy) Check(command, workdir, workspace string) Verdict {
	c := &checker{p: p, workdir: workdir, workspace: workspace}
	c.script(command, 0)
	if c.v.Decision == Ask && !c.structural {
		c.v.Prefixes = c.prefixes
	}
	if c.v.Reason == "" {
		c.v.Reason = "every command it runs is allowed"
	}
	return c.v
}

// checker walks one command, keeping the strongest verdict.
type checker struct {
	p                  *Policy
	workdir, workspace string
	v                  Verdict
	structural         bool            // an ask no prefix rule could answer
	prefixes           []string        // of the simple commands asked about
	changesDir         bool            // the script runs cd, pushd or popd
	ints               map[string]bool // variables declared -i: their values are arithmetic
}

// raise keeps v if it is stronger than what was found so far.
func (c *checker) raise(v Verdict) {
	if v.Decision > c.v.Decision || (c.v.Reason == "" && v.Decision == c.v.Decision) {
		c.v = v
	}
}

// unknowable is an ask that no rule can answer.
func (c *checker) unknowable(cmd, reason string) {
	c.structural = true
	c.raise(Verdict{Decision: Ask, Command: cmd, Reason: reason})
}

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

// fills asks about read, mapfile, getopts and printf -v filling a
// variable that changes what runs, or a subscript (which can run code).
func (c *checker) fills(base string, args []string, known int) {
	var targets []string
	switch {
	case readers[base]:
		targets = args[1:min(known, len(args))]
	case base == "printf":
		for i := 1; i+1 < known; i++ {
			if args[i] == "-v" {
				targets = append(targets, args[i+1])
			}
		}
		if known < len(args) && slicesContains(args[1:known], "-v") {
			c.unknowable("printf -v …", "it fills a variable named only when it runs")
		}
	}
	for _, t := range targets {
		// Other words are options and their values (read -p PROMPT).
		if dangerousVar(t) || strings.Contains(t, "[") {
			c.unknowable(base+" "+t, fmt.Sprintf("it fills %s, which changes what commands run or holds a subscript", t))
		}
	}
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gitArgs drops git's options that change nothing a rule cares about
// before its subcommand (--no-pager, -P, -C DIR within the workspace), so
// that git --no-pager diff matches "git diff". Others (-c, --git-dir, -C
// elsewhere) stay, and keep the rules from matching.
func (c *checker) gitArgs(args []string, known int) ([]string, int) {
	out := []string{args[0]}
	i := 1
	for ; i < known; i++ {
		switch a := args[i]; {
		case a == "--no-pager" || a == "-P" || a == "--no-optional-locks" || a == "--literal-pathspecs":
			continue
		case a == "-C" && i+1 < known && c.inWorkspace(args[i+1]):
			i++
			continue
		}
		break
	}
	out = append(out, args[i:]...)
	return out, known - (i - 1)
}

// inWorkspace reports whether dir (relative to the workdir) is in the
// workspace.
func (c *checker) inWorkspace(dir string) bool {
	if c.workspace == "" || c.changesDir {
		return false
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(c.workdir, dir)
	}
	return within(filepath.Clean(dir), c.workspace)
}

// rules applies the rules to one simple command; unmatched says whether
// Policy.Unmatched applies when none matches.
func (c *checker) rules(args []string, known int, text string, unmatched bool) {
	best := Verdict{Decision: -1}
	var maybe *Rule
	for i := range c.p.Rules {
		r := &c.p.Rules[i]
		ok, unsure := r.match(args, known)
		switch {
		case ok && r.Decision > best.Decision:
			best = Verdict{Decision: r.Decision, Rule: r, Command: text}
		case unsure && r.Decision != Allow && (maybe == nil || r.Decision > maybe.Decision):
			maybe = r
		}
	}
	if maybe != nil && maybe.Decision > best.Decision {
		c.unknowable(text, fmt.Sprintf("it may match rule %s: an argument is only known when it runs", maybe))
		return
	}
	if best.Rule != nil {
		best.Reason = fmt.Sprintf("%s matches rule %s", quoteCmd(text), best.Rule)
		c.raise(best)
		if best.Decision == Ask {
			c.prefixes = appendNew(c.prefixes, suggest(args, known))
		}
		return
	}
	if !unmatched {
		return
	}
	d := c.p.Unmatched
	reason := fmt.Sprintf("no rule allows %s", quoteCmd(text))
	if d == Allow {
		reason = ""
	}
	c.raise(Verdict{Decision: d, Command: text, Reason: reason})
	if d == Ask {
		if p := suggest(args, known); p != "" {
			c.prefixes = appendNew(c.prefixes, p)
		} else {
			c.structural = true
		}
	}
}

// dangerousVars change what later commands run or how bash reads them.
var dangerousVars = map[string]bool{
	"PATH": true, "IFS": true, "BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true,
	"PS4": true, "PROMPT_COMMAND": true, "CDPATH": true, "GLOBIGNORE": true,
	"LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true,
	"GIT_SSH": true, "GIT_SSH_COMMAND": true, "GIT_EXTERNAL_DIFF": true, "GIT_PAGER": true, "GIT_EDITOR": true,
	"GIT_ASKPASS": true, "SSH_ASKPASS": true, "GIT_EXEC_PATH": true, "GIT_CONFIG_GLOBAL": true, "GIT_CONFIG_SYSTEM": true,
	"PAGER": true, "EDITOR": true, "VISUAL": true, "BROWSER": true,
	"NODE_OPTIONS": true, "PYTHONSTARTUP": true, "PYTHONPATH": true, "PERL5OPT": true, "PERL5LIB": true,
	"RUBYOPT": true, "RUBYLIB": true, "JAVA_TOOL_OPTIONS": true, "GOFLAGS": true, "RUSTC_WRAPPER": true,
	"CC": true, "CXX": true, "MAKEFLAGS": true, "POSIXLY_CORRECT": true,
	"HOME": true, "XDG_CONFIG_HOME": true, "GIT_DIR": true, "GIT_COMMON_DIR": true, "GIT_WORK_TREE": true,
	"BASH_ALIASES": true, "BASH_CMDS": true, "BASH_LOADABLES_PATH": true, "EXECIGNORE": true,
}

// harmlessGitVars are the GIT_* variables that run nothing and point git
// nowhere else; any other GIT_* may (GIT_TEST_FSMONITOR runs its value).
var harmlessGitVars = map[string]bool{"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true,
	"GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true, "GIT_TERMINAL_PROMPT": true,
	"GIT_MERGE_AUTOEDIT": true, "GIT_OPTIONAL_LOCKS": true, "GIT_FLUSH": true, "GIT_ADVICE": true}

func dangerousVar(name string) bool {
	return dangerousVars[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "GIT_") && !harmlessGitVars[name] ||
		strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "DYLD_")
}

// assigns asks about assignments to variables that change what runs
// (naming one alone, as export PATH does, changes nothing).
func (c *checker) assigns(as []*syntax.Assign) {
	for _, a := range as {
		if a.Name == nil || a.Value == nil && a.Array == nil {
			continue
		}
		c.setsVar(a.Name.Value)
		if c.ints[a.Name.Value] && (a.Array != nil || !safeValue(a.Value)) {
			c.unknowable(a.Name.Value+"=…", fmt.Sprintf("%s is an integer variable: its value is evaluated as arithmetic, which can run commands", a.Name.Value))
		}
	}
}

// integerVars are the variables a script declares with -i.
func integerVars(f *syntax.File) map[string]bool {
	ints := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		d, ok := n.(*syntax.DeclClause)
		if !ok {
			return true
		}
		integer := false
		for _, a := range d.Args {
			if a.Naked && a.Value != nil {
				if s := a.Value.Lit(); strings.HasPrefix(s, "-") && strings.ContainsRune(s, 'i') {
					integer = true
				}
			}
			if integer && a.Name != nil {
				ints[a.Name.Value] = true
			}
		}
		return true
	})
	return ints
}

// setsVar asks about an assignment to a variable that changes what runs.
func (c *checker) setsVar(name string) {
	if dangerousVar(name) {
		c.unknowable(name+"=…", fmt.Sprintf("it sets %s, which changes what commands run", name))
	}
}

// paramExp asks about expansions that run what a value holds: ${x@P}
// (prompt expansion) and ${!x} (x names a variable, maybe a[$(cmd)]).
func (c *checker) paramExp(n *syntax.ParamExp, vars varSafety) {
	if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && strings.Contains(n.Exp.Word.Lit(), "P") {
		c.unknowable("${…@P}", "it expands a value as a prompt, which runs the commands it holds")
	}
	if n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) && n.Param != nil {
		if n.Excl {
			c.unknowable("${!"+n.Param.Value+":=…}", "it assigns the variable another one names")
		}
		c.setsVar(n.Param.Value)
	}
	if n.Excl && n.Param != nil && !vars.safe(n.Param.Value) && n.Index == nil && n.Names == 0 {
		c.unknowable("${!"+n.Param.Value+"}", fmt.Sprintf("it expands the variable that %s names, which may run a command in a subscript", n.Param.Value))
	}
}

// declare checks declare, export, local, readonly and typeset: what they
// assign, the strings they parse as assignments, namerefs and integer
// variables (whose values are evaluated as arithmetic).
func (c *checker) declare(d *syntax.DeclClause) {
	integer := false
	for _, a := range d.Args {
		if !a.Naked || a.Value == nil {
			c.assigns([]*syntax.Assign{a})
			if integer && a.Value != nil && !safeValue(a.Value) {
				c.unknowable(d.Variant.Value+" -i", "it evaluates an integer variable's value as arithmetic, which can run commands")
			}
			continue
		}
		s, ok := staticWord(a.Value, c.p.Home)
		switch {
		case !ok:
			c.unknowable(d.Variant.Value+" …", "it declares a name only known when it runs")
		case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
			if strings.ContainsRune(s, 'n') {
				c.unknowable(d.Variant.Value+" "+s, "it makes a nameref, which can change any variable")
			}
			integer = integer || strings.ContainsRune(s, 'i')
		case strings.ContainsAny(s, "$`["):
			c.unknowable(d.Variant.Value+" "+s, "it parses a string as an assignment, whose subscript can run commands")
		default:
			name, _, hasValue := strings.Cut(s, "=")
			if hasValue {
				c.setsVar(name)
			}
		}
	}
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

// writeOps are the redirections that write to their word (>& too, when
// its word is a file name rather than a descriptor).
var writeOps = map[syntax.RedirOperator]bool{
	syntax.RdrOut: true, syntax.AppOut: true, syntax.RdrInOut: true, syntax.RdrClob: true,
	syntax.RdrAll: true, syntax.AppAll: true, syntax.RdrAllClob: true, syntax.AppAllClob: true,
}

// harmlessTargets can be written anywhere.
var harmlessTargets = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/tty": true}

// redirect asks about a write outside the workspace.
func (c *checker) redirect(r *syntax.Redirect) {
	if !writeOps[r.Op] && r.Op != syntax.DplOut || r.Word == nil {
		return
	}
	target, ok := staticWord(r.Word, c.p.Home)
	if r.Op == syntax.DplOut && ok && isFD(target) {
		return
	}
	c.writes(target, ok)
}

// writes asks about a write to target (static says whether its name is
// known) outside the workspace.
func (c *checker) writes(target string, static bool) {
	if c.workspace == "" {
		return
	}
	if !static {
		c.unknowable("> …", "it writes to a file whose name is only known when it runs")
		return
	}
	if filepath.IsAbs(target) {
		target = filepath.Clean(target)
	}
	if harmlessTargets[target] || strings.HasPrefix(target, "/dev/fd/") {
		return
	}
	if !filepath.IsAbs(target) {
		if c.changesDir || c.workdir == "" {
			c.unknowable("> "+target, fmt.Sprintf("it writes to %s relative to a directory it changes", target))
			return
		}
		target = filepath.Join(c.workdir, target)
	}
	if !within(target, c.workspace) {
		c.unknowable("> "+target, fmt.Sprintf("it writes to %s, outside the workspace %s", target, c.workspace))
	}
}

// isFD reports whether a >& word is a descriptor (2, 3-) or - (close).
func isFD(s string) bool { return fdRE.MatchString(s) }

var fdRE = regexp.MustCompile(`^([0-9]+-?|-)$`)

func within(p, dir string) bool {
	dir = filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func isASCII(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII {
			return false
		}
	}
	return true
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

func quoteCmd(s string) string { return "`" + s + "`" }

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
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

// changesDir reports whether a script changes its directory anywhere (cd,
// pushd, popd, env -C): relative writes are then somewhere else, whatever
// the order the walk meets them in.
func changesDir(f *syntax.File, home string) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || found {
			return !found
		}
		args, known := argv(call.Args, home)
		if known == 0 {
			return true
		}
		switch path.Base(args[0]) {
		case "cd", "pushd", "popd":
			found = true
		case "env":
			for _, a := range args[1:] {
				found = found || a == "-C" || strings.HasPrefix(a, "-C") || strings.HasPrefix(a, "--ch")
			}
		}
		return !found
	})
	return found
}

// testV asks about test -v NAME[SUB]: the subscript is an expression.
func (c *checker) testV(args []string, known int) {
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "-v" && (i+1 >= known || strings.Contains(args[i+1], "[")) {
			c.unknowable(commandText(args, known), "test -v evaluates a subscript, which can run commands")
		}
	}
}
