package permission

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A variable put in the environment of the programs a command runs (X=1
// cmd, export X=1, declare -x, env X=1 cmd, NAME=VALUE words in keyword
// mode, any assignment once set -a is on) can make them run a program or
// write a file: GOFLAGS=-toolexec=PROG, GOCACHEPROG, npm_config_script_shell,
// PYTHONSTARTUP, KUBECONFIG with an exec plugin, GIT_CONFIG_*… Programs
// read more of them than any list of dangerous ones holds, so there only
// the variables known harmless are allowed, and those whose value is a
// command line (PAGER=cat) when that command is.

// harmlessEnvVars run nothing, write nothing and load nothing: locale,
// terminal and colour, build targets, logging.
var harmlessEnvVars = wordSet("LANG LANGUAGE TZ TERM COLUMNS LINES NO_COLOR FORCE_COLOR CLICOLOR " +
	"CLICOLOR_FORCE COLORTERM CI DEBIAN_FRONTEND " +
	"GOOS GOARCH GOARM GOAMD64 GO386 GOWASM CGO_ENABLED GOMAXPROCS GOGC GOMEMLIMIT GOTRACEBACK GODEBUG " +
	"GOPROXY GOSUMDB GONOSUMDB GONOSUMCHECK GONOPROXY GOPRIVATE GOINSECURE GOEXPERIMENT GO111MODULE " +
	"PYTHONUNBUFFERED PYTHONDONTWRITEBYTECODE PYTHONHASHSEED PYTHONIOENCODING PYTHONUTF8 " +
	"PYTHONFAULTHANDLER PYTHONNOUSERSITE PYTHONSAFEPATH NODE_ENV NODE_NO_WARNINGS NODE_DISABLE_COLORS " +
	"RUST_LOG RUST_BACKTRACE CARGO_TERM_COLOR CARGO_TERM_VERBOSE")

// commandVars hold a command line a program runs (git log runs $PAGER).
var commandVars = wordSet("PAGER GIT_PAGER MANPAGER SYSTEMD_PAGER EDITOR VISUAL GIT_EDITOR GIT_SEQUENCE_EDITOR")

// harmlessGoFlags are the GOFLAGS flags that run nothing and write
// nowhere else (not -toolexec, -exec, -overlay, -modfile, -o).
var harmlessGoFlags = wordSet("-mod -buildvcs -trimpath -v -race -tags -p -count -modcacherw -short -failfast -json")

// wordSet is the set of the words of list.
func wordSet(list string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}

// harmlessEnv reports whether a program's environment may hold name with
// the value (static says whether it is known) without it running a
// program or writing a file. A command line (see commandVars) is
// checked by the caller.
func harmlessEnv(name, value string, static bool) bool {
	switch {
	case harmlessEnvVars[name] || harmlessGitVars[name] || strings.HasPrefix(name, "LC_"):
		return true
	case !static:
		return false
	case name == "GOFLAGS":
		return harmlessGoFlagsValue(value)
	case name == "GOTOOLCHAIN":
		return value == "local"
	case name == "GOWORK":
		return value == "off"
	}
	return false
}

// harmlessGoFlagsValue reports whether each of GOFLAGS's flags is one of
// harmlessGoFlags.
func harmlessGoFlagsValue(v string) bool {
	for _, f := range strings.Fields(v) {
		name, _, _ := strings.Cut("-"+strings.TrimLeft(f, "-"), "=")
		if !harmlessGoFlags[name] {
			return false
		}
	}
	return true
}

// envAssign checks a variable put in the environment of the programs a
// command runs: one that changes how bash runs them (PATH), one whose
// value is a command line (checked as one), one not known harmless.
func (c *checker) envAssign(name, value string, static bool, depth int) {
	switch {
	case commandVars[name] && static:
		c.scriptIn(value, depth+1, syntax.LangPOSIX, syntax.LangBash)
	case commandVars[name]:
		c.unknowable(name+"=…", fmt.Sprintf("it sets %s, a command line, to a value only known when it runs", name))
	case harmlessEnv(name, value, static):
	case dangerousVar(name):
		c.setsVar(name)
	default:
		c.unknowable(name+"=…", fmt.Sprintf("it puts %s in the environment of the programs it runs, where it may make them run a program or write a file: only variables known harmless are allowed", name))
	}
}

// envAssigns checks assignments that go into a command's environment.
func (c *checker) envAssigns(as []*syntax.Assign, depth int) {
	for _, a := range as {
		if a.Name == nil {
			continue
		}
		if a.Value == nil && a.Array == nil {
			c.nakedExport(a.Name.Value)
			continue
		}
		v, static := "", false
		if a.Value != nil && !a.Append {
			v, static = staticWord(a.Value, c.p.Home)
		}
		c.envAssign(a.Name.Value, v, static, depth)
	}
}

// nakedExport asks about export NAME of a variable the script assigns
// (maybe before, as a shell variable: export puts it in the
// environment) that is not known harmless.
func (c *checker) nakedExport(name string) {
	if c.assigned[name] && !harmlessEnv(name, "", false) && !commandVars[name] {
		c.unknowable("export "+name, fmt.Sprintf("it exports %s, which it sets, to the programs it runs: only variables known harmless are allowed", name))
	}
}

// assignedVars are the variables a script may set: assignments, loop
// variables, ${X:=…}, and the words of read, mapfile, getopts and
// printf -v (which may be the names they fill).
func assignedVars(f *syntax.File) map[string]bool {
	m := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil && !n.Naked {
				m[n.Name.Value] = true
			}
		case *syntax.WordIter:
			if n.Name != nil {
				m[n.Name.Value] = true
			}
		case *syntax.ParamExp:
			if n.Param != nil && n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) {
				m[n.Param.Value] = true
			}
		case *syntax.CallExpr:
			for _, w := range n.Args {
				if lit := w.Lit(); lit != "" {
					m[lit] = true
				}
			}
		}
		return true
	})
	return m
}

// allexportMay reports whether a script may turn on allexport (set -a,
// set -o allexport, shopt -so allexport, bash -a, or set with a word only
// known when it runs), after which every variable it assigns is in the
// environment of the programs it runs. It reads words as bash does
// (set -"a", 'se't -a), by the command's resolved name.
func allexportMay(f *syntax.File, home string) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || found || len(call.Args) == 0 {
			return !found
		}
		args, known := argv(call.Args, home)
		found = known > 0 && turnsOnAllexport(args, known)
		return !found
	})
	return found
}

// turnsOnAllexport reports whether a command may turn on allexport.
func turnsOnAllexport(args []string, known int) bool {
	switch name := args[0]; {
	case name == "set" || name == "shopt" || shells[name] || name == "zsh" || name == "ksh":
		if known < len(args) && (name == "set" || name == "shopt") {
			return true
		}
		for _, a := range args[1:known] {
			if a == "allexport" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsRune(a, 'a') {
				return true
			}
			if shells[name] && strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'c') {
				return false // the options end at the string to run
			}
		}
	case name == "builtin" || name == "command" || name == "eval" || name == "exec":
		return known > 1 && turnsOnAllexport(args[1:], known-1)
	}
	return false
}

// allexportScript notes, for a script (or a string it runs), whether
// allexport may be on and which variables it sets. A string that turns
// it on where the whole command did not show it (eval 'set -a') may have
// changed how commands already checked are read, which it asks about.
func (c *checker) allexportScript(f *syntax.File, depth int) {
	if c.assigned == nil {
		c.assigned = map[string]bool{}
	}
	for name := range assignedVars(f) {
		c.assigned[name] = true
	}
	on := allexportMay(f, c.p.Home)
	if depth > 0 && on && !c.allexport {
		c.unknowable("set -a", "it turns on allexport (set -a) in a string, after which every variable it sets is in the environment of the programs it runs")
	}
	c.allexport = c.allexport || on
}
