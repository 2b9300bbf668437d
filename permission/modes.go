package permission

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash options that change how later text is read: keyword mode (set -k:
// NAME=VALUE words after a command's name are assignments to its
// environment) and history expansion (set -H with set -o history: !!:1
// is a word of an earlier line, which the text does not show). They are
// found however their names and options are spelled ('se't -"k",
// set -o key''word, builtin set -k, bash -eo keyword -c …), and a word
// only known when it runs may turn on any.

// shellModes are the modes a script may turn on.
type shellModes struct{ keyword, history bool }

// or adds the modes of o.
func (m *shellModes) or(o shellModes) {
	m.keyword = m.keyword || o.keyword
	m.history = m.history || o.history
}

// allModes is what a word only known when it runs may turn on.
var allModes = shellModes{keyword: true, history: true}

// scanModes finds the modes the simple commands of f may turn on: set
// and shopt, alone or after builtin or command.
func scanModes(f *syntax.File, home string) shellModes {
	var m shellModes
	syntax.Walk(f, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			args, known := argv(call.Args, home)
			m.or(callModes(args, known))
		}
		return true
	})
	return m
}

// callModes is what one simple command may turn on.
func callModes(args []string, known int) shellModes {
	for known > 0 && (args[0] == "builtin" || args[0] == "command") {
		args, known = args[1:], known-1
		for known > 0 && strings.HasPrefix(args[0], "-") { // command -p, builtin --
			args, known = args[1:], known-1
		}
	}
	switch {
	case known == 0: // no name, or one only known when it runs: asked about anyway
	case args[0] == "set":
		return readOptions(args[1:], known-1).modes
	case args[0] == "shopt":
		var m shellModes
		for i, a := range args[1:] {
			if i+1 >= known {
				return allModes
			}
			m.or(shellModes{keyword: a == "keyword", history: a == "histexpand"})
		}
		return m
	}
	return shellModes{}
}

// shellOptions are the option words of set, or of a shell's command line.
type shellOptions struct {
	modes       shellModes
	c           bool // -c: the first operand is a string to run
	interactive bool // -i
	rcfile      bool // --rcfile or --init-file
	compat      bool // -O compat41 …: a bash compatibility level
	end         int  // where the operands start
	unknown     bool // a word only known when it runs
}

// readOptions reads option words as bash's set and bash itself do, up to
// the first operand: clusters of flags (-ek), -o NAME and +o NAME (each
// o of a cluster takes the next word, -eo keyword), -O and +O.
func readOptions(words []string, known int) shellOptions {
	var o shellOptions
	for i := 0; i < len(words); i++ {
		if i >= known {
			o.modes, o.unknown, o.end = allModes, true, i
			o.c = o.c || mayHaveC(words[i:])
			return o
		}
		a := words[i]
		switch {
		case a == "--" || a == "-":
			o.end = i + 1
			return o
		case a == "--rcfile" || a == "--init-file":
			o.rcfile = true
			i++
		case strings.HasPrefix(a, "--"): // --norc, --login, …: no value
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			i = o.cluster(words, known, i)
		default:
			o.end = i
			return o
		}
	}
	o.end = len(words)
	return o
}

// mayHaveC reports whether words after one only known when it runs have
// what may be -c: that word may be several, or none.
func mayHaveC(words []string) bool {
	for _, w := range words {
		if len(w) > 1 && (w[0] == '-' || w[0] == '+') && strings.ContainsRune(w, 'c') {
			return true
		}
	}
	return false
}

// cluster reads the flags of words[i], and the option names its o and O
// take from the next words; it returns the index of the last word used.
func (o *shellOptions) cluster(words []string, known, i int) int {
	a := words[i]
	on := a[0] == '-'
	for _, ch := range a[1:] {
		switch ch {
		case 'o', 'O':
			i++
			if i >= len(words) {
				return i
			}
			if i >= known {
				o.modes = allModes // a name only known when it runs
				continue
			}
			o.modes.or(shellModes{keyword: on && words[i] == "keyword", history: on && words[i] == "histexpand"})
			o.compat = o.compat || ch == 'O' && strings.HasPrefix(words[i], "compat")
		case 'k':
			o.modes.keyword = o.modes.keyword || on
		case 'H':
			o.modes.history = o.modes.history || on
		case 'c':
			o.c = true
		case 'i':
			o.interactive = o.interactive || on
		}
	}
	return i
}

// modes notes the modes src (parsed as f) may turn on. Keyword mode
// changes how every command is read, the ones checked before too: for
// the whole command it is known before the walk (from its text, which
// holds the strings eval and bash -c run, and from its commands); a
// string that turns it on where that did not show it is asked about.
func (c *checker) modes(f *syntax.File, src string, depth int) {
	m := scanModes(f, c.p.Home)
	m.keyword = m.keyword || mayKeyword(src)
	if depth == 0 {
		c.src, c.keyword = src, m.keyword
	} else if m.keyword && !c.keyword {
		c.keyword = true
		c.unknowable(src, "it turns on keyword mode (set -k) in a string, where NAME=VALUE words of any command set its environment")
	}
	if m.history {
		c.historyOn()
	}
}

// historyOn notes that history expansion may be on: a ! or ^ anywhere in
// the command may then stand for words of other lines.
func (c *checker) historyOn() {
	if c.history {
		return
	}
	c.history = true
	if strings.ContainsAny(c.src, "!^") {
		c.unknowable(c.src, "it may turn on history expansion (set -H), where ! and ^ stand for words of other lines")
	}
}

// compat asks about shopt -s compat31 … compat44: bash then reads
// some text as older versions did ("${x/a/'$(cmd)'}" runs cmd), which
// this checker does not follow; so is an option only known when it runs.
func (c *checker) compat(args []string, known int) {
	for i, a := range args[1:] {
		if i+1 >= known || strings.HasPrefix(a, "compat") {
			c.unknowable(commandText(args, known), "it may set a bash compatibility level, which changes how bash reads text")
			return
		}
	}
}

// hasComment reports whether src, as bash reads it, has a comment.
func hasComment(src string) bool {
	f, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
	if err != nil {
		return false // the string's own check asks
	}
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		_, isComment := n.(*syntax.Comment)
		found = found || isComment
		return !found
	})
	return found
}
