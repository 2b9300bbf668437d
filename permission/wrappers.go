package permission

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A wrapper runs the command in its arguments, after its own options;
// valued lists the options that take a value (attached, or the next
// argument).
type wrapper struct {
	valued    string // space-separated options that take a value
	optional  string // options whose value is optional: attached only (-i{}, --eof=X)
	flags     string // its options without a value, when the table lists them all: others are asked about
	operands  int    // non-option arguments before the command (timeout's duration)
	assigns   bool   // NAME=VALUE arguments before the command (env)
	escalates bool   // runs the command with other rights: it needs a rule of its own
	writes    string // options whose value is a file it writes
	lockFile  bool   // its first operand is a file it creates (flock)
}

// wrappers are the commands that run the command in their arguments.
var wrappers = map[string]wrapper{
	"env": {valued: "-u --unset -C --chdir -S --split-string -a --argv0", assigns: true,
		optional: "--block-signal --default-signal --ignore-signal",
		flags:    "- -i --ignore-environment -0 --null -v --debug --list-signal-handling --help --version"},
	"command": {},
	"builtin": {},
	"exec":    {valued: "-a", flags: "-c -l"},
	"nohup":   {},
	"time": {valued: "-f --format -o --output", writes: "-o --output",
		flags: "-a --append -p --portability -q --quiet -v --verbose -h --help -V --version"},
	"setsid": {flags: "-c --ctty -f --fork -w --wait -h --help -V --version"},
	"stdbuf": {valued: "-i -o -e --input --output --error", flags: "--help --version"},
	"nice":   {valued: "-n --adjustment"},
	"ionice": {valued: "-c -n -p -P -u --class --classdata"},
	"timeout": {valued: "-s --signal -k --kill-after", operands: 1,
		flags: "--preserve-status -p --foreground -v --verbose --help --version"},
	"sudo": {valued: "-u -g -C -D -p -r -t -U -T --user --group --chdir --host --prompt --role --type --other-user --command-timeout",
		optional: "-h", escalates: true},
	"doas": {valued: "-u -C", escalates: true},
	"xargs": {valued: "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var",
		optional: "-e -i -l --eof --replace --max-lines",
		flags: "-0 --null -o --open-tty -p --interactive -r --no-run-if-empty -t --verbose -x --exit --show-limits " +
			"--help --version"},
	"chrt":     {operands: 1},
	"taskset":  {operands: 1},
	"unbuffer": {},
	"flock": {valued: "-w --wait --timeout -E --conflict-exit-code", lockFile: true,
		flags: "-s --shared -x --exclusive -u --unlock -n --nonblock --nb -o --close -F --no-fork --verbose -h --help -V --version"},
}

// shells run a string with -c.
var shells = map[string]bool{"bash": true, "sh": true, "dash": true, "ash": true}

// runs checks what a wrapper, a shell given -c, eval, trap, alias or
// find -exec runs, and reports whether the command only passes another on
// (then it answers only to the rules that name it, not to Unmatched).
func (c *checker) runs(base string, args []string, known, depth int) bool {
	if w, ok := wrappers[base]; ok {
		return c.wrapped(w, base, args, known, depth)
	}
	switch {
	case shells[base] || base == "zsh" || base == "ksh" || base == "mksh":
		return c.shellC(base, args, known, depth)
	case base == "eval":
		c.strings(args[1:], known-1, depth, "eval")
		return true
	case base == "watch":
		c.watch(args, known, depth)
		return true
	case base == "trap":
		c.trap(args, known, depth)
		return false
	case base == "alias":
		c.alias(args, known, depth)
		return false
	case base == "find":
		c.findExec(args, known, depth)
	}
	return false
}

// wrapped checks the command after a wrapper's options, and reports
// whether there was one.
func (c *checker) wrapped(w wrapper, name string, args []string, known, depth int) bool {
	i, unknown := c.wrapperOptions(w, name, args, known)
	if unknown {
		return true
	}
	if w.lockFile {
		if c.lockCommand(name, args, i, known, depth) {
			return true
		}
		i++ // the command follows the lock file
	}
	i += w.operands
	if name == "command" && len(args) > 1 && (args[1] == "-v" || args[1] == "-V") {
		return false // a lookup: runs nothing
	}
	if i >= len(args) {
		return false // nothing to run (env alone prints the environment)
	}
	inner := args[i:]
	if name == "xargs" {
		// It adds words read from its input, which may be options:
		// echo -o/tmp/x | xargs sort.
		inner = append(slices.Clone(inner), dynamicWord)
	}
	c.call(inner, max(known-i, 0), depth+1)
	return true
}

// wrapperOptions reads a wrapper's options and NAME=VALUE arguments up to
// the command it runs, checking the files the options write and the
// variables the arguments set. It returns where the command begins;
// unknown says that it asked instead, what runs being only known when it
// runs (a word from an expansion, env -S).
func (c *checker) wrapperOptions(w wrapper, name string, args []string, known int) (i int, unknown bool) {
	for i = 1; i < len(args); i++ {
		if i >= known {
			c.unknowable(commandText(args, known), fmt.Sprintf("what %s runs is only known when it runs", name))
			return i, true
		}
		a := args[i]
		switch {
		case a == "--":
			return i + 1, false
		case w.assigns && isAssign(a):
			c.wrapperAssign(a, args, known)
		case !strings.HasPrefix(a, "-") || a == "-" && !takesValue(w.flags, "-"):
			return i, false
		default:
			used, ok := c.wrapperOption(w, name, args, i, known)
			if !ok {
				return i, true
			}
			i += used - 1
		}
	}
	return i, false
}

// wrapperAssign asks about a wrapper's NAME=VALUE argument (env PATH=…)
// that sets a variable that changes what runs.
func (c *checker) wrapperAssign(a string, args []string, known int) {
	name, v, _ := strings.Cut(a, "=")
	c.envAssign(name, v, true, 0)
}

// wrapperOption reads the wrapper's option at args[i], checks the file it
// writes (time -o FILE), and returns how many arguments it used. ok is
// false when it asked instead: the option makes a string into a command
// (env -S), or the wrapper has no such option, which may take a value
// and so move where the command starts.
func (c *checker) wrapperOption(w wrapper, name string, args []string, i, known int) (used int, ok bool) {
	a := args[i]
	opt, value, used, hasValue, unknown := w.option(args, i)
	if name == "env" && (opt == "--split-string" || !strings.HasPrefix(a, "--") && strings.ContainsRune(a, 'S')) {
		c.unknowable(commandText(args, known), "env -S splits a string into a command")
		return used, false
	}
	if unknown != "" {
		c.unknowable(commandText(args, known), fmt.Sprintf("%s has no option %s this checker knows of: where the command it runs starts is not known", name, unknown))
		return used, false
	}
	if hasValue && takesValue(w.writes, opt) {
		c.writes(value, i+used-1 < known)
	}
	return used, true
}

// lockCommand checks the lock file flock creates (args[i], its first
// operand) and the string it runs with -c, and reports whether it runs
// one.
func (c *checker) lockCommand(name string, args []string, i, known, depth int) bool {
	if i >= len(args) {
		return false
	}
	c.writes(args[i], i < known)
	if i+2 < len(args) && (args[i+1] == "-c" || args[i+1] == "--command") {
		c.child(func() { c.strings(args[i+2:i+3], known-i-2, depth, name) })
		return true
	}
	return false
}

// assignRE matches a NAME=VALUE argument.
var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// isAssign reports whether a is a NAME=VALUE argument.
func isAssign(a string) bool { return assignRE.MatchString(a) }

// shellC checks the string of bash -c (and sh, zsh, …); without -c the
// shell runs a file or its input, which the rules decide on. The modes
// its options turn on (-k, -o keyword, -H) hold for the string; an
// interactive shell (-i) expands history, and may not read # as a
// comment (shopt -u interactive_comments).
func (c *checker) shellC(shell string, args []string, known, depth int) bool {
	o := readOptions(args[1:], known-1)
	s := 1 + o.end // the string, with -c
	switch {
	case o.rcfile:
		c.unknowable(commandText(args, known), "it makes the shell read a startup file")
		return true
	case o.compat:
		c.unknowable(commandText(args, known), "it sets a bash compatibility level, which changes how bash reads text")
		return true
	case !o.c || s >= len(args):
		return o.c
	case o.unknown || s >= known:
		c.unknowable(commandText(args, known), "the string it runs is only known when it runs")
		return true
	}
	c.keyword = c.keyword || o.modes.keyword
	if o.modes.history || o.interactive {
		c.historyOn()
	}
	if o.interactive && hasComment(args[s]) {
		c.unknowable(commandText(args, known), "an interactive shell may not read # as a comment (shopt -u interactive_comments)")
	}
	c.child(func() { c.shellString(shell, args[s], args, known, depth) })
	return true
}

// shellString checks the string a shell runs with -c: as bash reads it
// for bash, as both dash and bash do for sh (which may be either), and
// as an ask for the shells this checker does not read.
func (c *checker) shellString(shell, s string, args []string, known, depth int) {
	switch shell {
	case "bash":
		c.script(s, depth+1)
	case "sh", "dash", "ash":
		c.scriptIn(s, depth+1, syntax.LangPOSIX, syntax.LangBash)
	case "zsh":
		if !plainScript(s) {
			c.unknowable(commandText(args, known), "it runs a string in zsh, which this checker reads only when it is plain words")
			return
		}
		c.script(s, depth+1)
	default:
		c.unknowable(commandText(args, known), fmt.Sprintf("it runs a string in %s, which this checker does not read", shell))
	}
}

// plainScript reports whether s is words of plain characters (letters,
// digits, space, and -_./,:@%+=), separated by at most | ; and &&:
// zsh reads it as bash does (no glob qualifier, =cmd, $ or quote in it).
func plainScript(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune(" -_./,:@%+|;&", r):
		default:
			return false
		}
	}
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "=") {
			return false // =cmd is the path of cmd
		}
	}
	return true
}

// strings checks words that bash joins and runs (eval).
func (c *checker) strings(words []string, known, depth int, what string) {
	if known < len(words) {
		c.unknowable(what+" …", fmt.Sprintf("the string %s runs is only known when it runs", what))
		return
	}
	c.script(strings.Join(words, " "), depth+1)
}

// watchOptions are watch's (procps-ng 4): -d takes its value only
// attached; options stop at its first operand.
var watchOptions = wrapper{valued: "-n --interval -q --equexit", optional: "-d --differences",
	flags: "-b --beep -c --color -C --no-color -e --errexit -g --chgexit -p --precise -r --no-rerun " +
		"-t --no-title -w --no-wrap -x --exec -h --help -v --version"}

// watch runs its operands joined into a string through sh -c, or with -x
// (--exec) as the command they are.
func (c *checker) watch(args []string, known, depth int) {
	exec := false
	i := 1
	for ; i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-"; i++ {
		if i >= known {
			c.unknowable(commandText(args, known), "what watch runs is only known when it runs")
			return
		}
		if args[i] == "--" {
			i++
			break
		}
		opt, value, used, hasValue, unknown := watchOptions.option(args, i)
		if unknown != "" {
			c.unknowable(commandText(args, known), fmt.Sprintf("watch has no option %s this checker knows of: where the command it runs starts is not known", unknown))
			return
		}
		exec = exec || opt == "--exec" || isShortCluster(args[i]) && strings.Contains(clusterOptions(args[i], value, used, hasValue), "x")
		i += used - 1
	}
	if i >= len(args) {
		return
	}
	switch {
	case exec:
		c.call(args[i:], max(known-i, 0), depth+1)
	case known < len(args):
		c.unknowable("watch …", "the string watch runs is only known when it runs")
	default:
		c.child(func() { c.scriptIn(strings.Join(args[i:], " "), depth+1, syntax.LangPOSIX, syntax.LangBash) })
	}
}

// isShortCluster reports whether a is one or more short options (-tx).
func isShortCluster(a string) bool { return len(a) > 1 && a[0] == '-' && a[1] != '-' }

// clusterOptions is the options of a cluster, without the value attached
// to its last one (-dx: d; -tn1: tn).
func clusterOptions(a, value string, used int, hasValue bool) string {
	if hasValue && used == 1 {
		return a[1 : len(a)-len(value)]
	}
	return a[1:]
}

// trap's action runs later, on a signal. Its options (-l, -p) come
// first; after them (and --) an action of "-" resets the signals, and any
// other, even one starting with -, runs (trap -- '-x; cmd' EXIT).
func (c *checker) trap(args []string, known, depth int) {
	i := 1
	for i < len(args) && i < known && isShortCluster(args[i]) && args[i] != "--" {
		i++
	}
	if i < len(args) && i < known && args[i] == "--" {
		i++
	}
	switch {
	case len(args)-i < 2:
		return // no action: the signal is reset
	case known <= i:
		c.unknowable("trap …", "the action trap sets is only known when it runs")
	case args[i] != "-":
		c.script(args[i], depth+1)
	}
}

// alias values run where the alias is used (aliases expand in scripts
// once expand_aliases is set).
func (c *checker) alias(args []string, known, depth int) {
	for i, a := range args[1:] {
		if i+1 >= known {
			c.unknowable("alias …", "an alias's value is only known when it runs")
			return
		}
		if _, v, ok := strings.Cut(a, "="); ok {
			c.script(v, depth+1)
		}
	}
}

// findExec checks the commands of find's -exec, -execdir, -ok and -okdir.
func (c *checker) findExec(args []string, known, depth int) {
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		end := i + 1
		for end < len(args) && args[end] != ";" && args[end] != "+" {
			end++
		}
		if i+1 < end {
			c.call(args[i+1:end], min(max(known-i-1, 0), end-i-1), depth+1)
		}
		i = end
	}
}
