package permission

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

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
	"BASH_ALIASES": true, "BASH_CMDS": true, "BASH_LOADABLES_PATH": true, "EXECIGNORE": true, "histchars": true, "BASH_COMPAT": true,
	// Read by programs the built-in tables allow: a configuration file or
	// a program to run, a directory of code to load, where to write.
	"RIPGREP_CONFIG_PATH": true, "GREP": true, "GOENV": true, "GOTOOLCHAIN": true, "CGO_CFLAGS": true,
	"CGO_CPPFLAGS": true, "CGO_CXXFLAGS": true, "CGO_FFLAGS": true, "CGO_LDFLAGS": true, "GCONV_PATH": true,
	"LOCPATH": true, "NLSPATH": true, "JDK_JAVA_OPTIONS": true, "_JAVA_OPTIONS": true, "LESSOPEN": true,
	"LESSCLOSE": true, "MANPAGER": true, "PYTHONHOME": true, "NODE_PATH": true, "TMPDIR": true,
	"JQ_LIBRARY_PATH": true, "MAGIC": true, "TAR_OPTIONS": true, "GZIP": true, "XZ_OPT": true,
	// Read by go, python, kubectl: a program to run, where to write.
	// Assigned to a variable the environment may already hold, they change
	// it for the programs later commands run.
	"GOCACHEPROG": true, "GOAUTH": true, "GOCACHE": true, "GOMODCACHE": true, "GOPATH": true, "GOBIN": true,
	"GOWORK": true, "GOROOT": true, "PYTHONUSERBASE": true, "PYTHONBREAKPOINT": true, "PYTHONWARNINGS": true,
	"PYTHONPYCACHEPREFIX": true, "KUBECONFIG": true, "DOCKER_CONFIG": true, "DOCKER_HOST": true,
	"GH_CONFIG_DIR": true, "SHELL": true,
}

// harmlessGitVars are the GIT_* variables that run nothing and point git
// nowhere else; any other GIT_* may (GIT_TEST_FSMONITOR runs its value).
var harmlessGitVars = map[string]bool{"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true,
	"GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true, "GIT_TERMINAL_PROMPT": true,
	"GIT_MERGE_AUTOEDIT": true, "GIT_OPTIONAL_LOCKS": true, "GIT_FLUSH": true, "GIT_ADVICE": true}

// dangerousVar reports whether assigning name changes what commands run
// or how bash reads them: the table, and the LD_, DYLD_, BASH_FUNC_ and
// GIT_ families (harmless GIT_ variables aside).
func dangerousVar(name string) bool {
	return dangerousVars[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "GIT_") && !harmlessGitVars[name] ||
		strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "DYLD_") ||
		strings.HasPrefix(strings.ToLower(name), "npm_config_")
}

// setsVar asks about an assignment to a variable that changes what runs.
func (c *checker) setsVar(name string) {
	if dangerousVar(name) || c.allexport && !harmlessEnv(name, "", false) {
		c.unknowable(name+"=…", fmt.Sprintf("it sets %s, which changes what commands run", name))
	}
}

// arithAssign asks about arithmetic that assigns a variable that changes
// what runs: ((PATH=0)), let BASH_ENV++ (a number is enough: a relative
// PATH, a file named 0).
func (c *checker) arithAssign(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.BinaryArithm:
		if w, ok := n.X.(*syntax.Word); ok && isAssignOp(n.Op) {
			c.setsVar(w.Lit())
		}
	case *syntax.UnaryArithm:
		if w, ok := n.X.(*syntax.Word); ok && (n.Op == syntax.Inc || n.Op == syntax.Dec) {
			c.setsVar(w.Lit())
		}
	}
}

// loopVar asks about a for loop whose variable changes what runs.
func (c *checker) loopVar(n *syntax.WordIter) {
	if n.Name != nil && (dangerousVar(n.Name.Value) || c.allexport && !harmlessEnv(n.Name.Value, "", false)) {
		c.unknowable("for "+n.Name.Value, fmt.Sprintf("its loop sets %s, which changes what commands run", n.Name.Value))
	}
}

// assigns asks about assignments to variables that change what runs
// (naming one alone, as export PATH does, changes nothing); where
// allexport may be on, each is one to the environment.
func (c *checker) assigns(as []*syntax.Assign) {
	if c.allexport {
		c.envAssigns(as, 0)
	} else {
		for _, a := range as {
			if a.Name != nil && (a.Value != nil || a.Array != nil) {
				c.setsVar(a.Name.Value)
			}
		}
	}
	c.intAssigns(as)
}

// intAssigns asks about values assigned to integer variables, which are
// evaluated as arithmetic.
func (c *checker) intAssigns(as []*syntax.Assign) {
	for _, a := range as {
		if a.Name == nil || a.Value == nil && a.Array == nil {
			continue
		}
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

// declare checks declare, export, local, readonly and typeset: what they
// assign, the strings they parse as assignments, namerefs and integer
// variables (whose values are evaluated as arithmetic).
func (c *checker) declare(d *syntax.DeclClause) {
	integer, env := false, d.Variant.Value == "export"
	for _, a := range d.Args {
		if !a.Naked || a.Value == nil {
			if env {
				c.envAssigns([]*syntax.Assign{a}, 0)
			} else {
				c.assigns([]*syntax.Assign{a})
			}
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
			env = env || strings.HasPrefix(s, "-") && strings.ContainsRune(s, 'x')
		case strings.ContainsAny(s, "$`["):
			c.unknowable(d.Variant.Value+" "+s, "it parses a string as an assignment, whose subscript can run commands")
		default:
			name, v, hasValue := strings.Cut(s, "=")
			switch {
			case env && hasValue:
				c.envAssign(name, v, true, 0)
			case env:
				c.nakedExport(name)
			case hasValue:
				c.setsVar(name)
			}
		}
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

// readers assign what they read to the variables named in their arguments.
var readers = map[string]bool{"read": true, "mapfile": true, "readarray": true, "getopts": true}

// fills asks about read, mapfile, getopts and printf -v filling a
// variable that changes what runs, or a subscript (which can run code),
// or one named only when it runs.
func (c *checker) fills(base string, args []string, known int) {
	names, unknown := filledNames(base, args, known)
	if unknown {
		c.unknowable(commandText(args, known), fmt.Sprintf("%s fills a variable named only when it runs", base))
	}
	for _, t := range names {
		if dangerousVar(t) || c.allexport && !harmlessEnv(t, "", false) || strings.Contains(t, "[") {
			c.unknowable(base+" "+t, fmt.Sprintf("it fills %s, which changes what commands run or holds a subscript", t))
		}
	}
}

// filledNames are the names of the variables read, mapfile, getopts and
// printf -v may fill, erring toward more: for the readers, every word
// and every tail of an option cluster (read -raPATH fills PATH); for
// printf, the value of -v (attached, -vPATH, or the next word). unknown
// says a word only known when it runs may name one.
func filledNames(base string, args []string, known int) (names []string, unknown bool) {
	switch {
	case readers[base]:
		for _, a := range args[1:min(known, len(args))] {
			names = append(names, a)
			for j := 2; strings.HasPrefix(a, "-") && j < len(a); j++ {
				names = append(names, a[j:])
			}
		}
		return names, known < len(args)
	case base == "printf":
		return printfV(args, known)
	}
	return nil, false
}

// printfV is what printf's -v fills: its options come before the format
// (bash's printf has only -v), and a word only known when it runs there
// may be -vNAME, unless its static start shows it is not an option
// ("Hello $name").
func printfV(args []string, known int) (names []string, unknown bool) {
	for i := 1; i < len(args); i++ {
		if i >= known {
			start, _ := dynamicStart(args[i])
			return names, start == "" || strings.HasPrefix(start, "-")
		}
		a := args[i]
		switch {
		case a == "--" || !strings.HasPrefix(a, "-") || a == "-":
			return names, false
		case a == "-v" && i+1 >= known:
			return names, i+1 < len(args)
		case a == "-v":
			names = append(names, args[i+1])
			i++
		case strings.HasPrefix(a, "-v"):
			names = append(names, a[2:])
		}
	}
	return names, false
}

// varRedirect asks about {NAME}> (and <, >>, …), which assigns NAME a
// descriptor number: a variable that changes what runs (PATH=10 makes
// ./10 a directory of commands), or a subscript, which is evaluated.
func (c *checker) varRedirect(r *syntax.Redirect) {
	if r.N == nil || !strings.HasPrefix(r.N.Value, "{") {
		return
	}
	name := strings.TrimSuffix(strings.TrimPrefix(r.N.Value, "{"), "}")
	if strings.Contains(name, "[") {
		c.unknowable(r.N.Value, "its {NAME} redirection evaluates a subscript, which can run commands")
		return
	}
	c.setsVar(name)
}

// adjacentVarRedirect asks about a word {…} just before a redirection
// that the parser took for an argument ({a['$(cmd)']}>f): bash may read
// it as {NAME}>, assigning NAME and evaluating its subscript.
func (c *checker) adjacentVarRedirect(s *syntax.Stmt) {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok {
		return
	}
	for _, r := range s.Redirs {
		for _, w := range call.Args {
			if w.End() == r.OpPos && r.N == nil && strings.HasPrefix(wordText(w), "{") {
				c.unknowable(wordText(w), "bash may read a {…} word just before a redirection as {NAME}>, which assigns NAME")
			}
		}
	}
}

// testV asks about test -v NAME[SUB]: the subscript is an expression.
func (c *checker) testV(args []string, known int) {
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "-v" && (i+1 >= known || strings.Contains(args[i+1], "[")) {
			c.unknowable(commandText(args, known), "test -v evaluates a subscript, which can run commands")
		}
	}
}
