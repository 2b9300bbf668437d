package permission

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// matchCommand decides by the rules on a simple command that runs no
// other, once its arguments are in the form rules are written in (see
// canonical).
func (c *checker) matchCommand(base string, args []string, known int, text string) {
	args, known = c.canonical(base, args, known)
	c.rules(args, known, text, true)
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

// match reports whether the rule matches argv. known is how many of
// argv's leading words are known statically; a rule that needs a word
// beyond them cannot tell, which maybe says.
func (r *Rule) match(argv []string, known int) (ok, maybe bool) {
	for i, w := range r.words {
		if w == "*" && i == len(r.words)-1 {
			return true, false
		}
		if i >= len(argv) {
			return false, false
		}
		if i >= known {
			return false, true
		}
		a := argv[i]
		if i == 0 && !strings.Contains(w, "/") {
			if r.Decision == Allow && strings.Contains(a, "/") {
				// An allowed name is the program PATH finds, not any
				// file of that name (./ls, /tmp/evil/ls).
				return false, false
			}
			a = path.Base(a)
		}
		if ok, _ := path.Match(w, a); !ok {
			return false, false
		}
	}
	return true, false
}

// suggest is the narrowest useful prefix to allow for a command: its name,
// and its first argument when the command has subcommands (git push) and
// that is one, or the script an interpreter runs.
func suggest(args []string, known int) string {
	if known == 0 {
		return ""
	}
	name := path.Base(args[0])
	if known == 1 || len(args) == 1 {
		return name
	}
	first := args[1]
	if withSubcommands[name] && subcommand.MatchString(first) || interpreters[name] && !strings.HasPrefix(first, "-") {
		return name + " " + first
	}
	return name
}

var subcommand = regexp.MustCompile(`^[a-z][a-z0-9_:-]*$`)

func quoteCmd(s string) string { return "`" + s + "`" }

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
