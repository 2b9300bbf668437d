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

// rules decides on one simple command by the rules; unmatched says
// whether Policy.Unmatched applies when none matches. A rule, other than
// allow, that is stronger than any that matches and cannot tell for a
// word only known when it runs, makes it an ask.
func (c *checker) rules(args []string, known int, text string, unmatched bool) {
	best, maybe := c.p.ruleFor(args, known)
	switch {
	case maybe != nil && maybe.Decision > strength(best):
		c.unknowable(text, fmt.Sprintf("it may match rule %s: an argument is only known when it runs", maybe))
	case best != nil:
		c.matched(best, args, known, text)
	case unmatched:
		c.noneMatched(args, known, text)
	}
}

// ruleFor finds the rules that decide on argv: best, the first of the
// strongest rules that match it, and maybe, the first of the strongest
// rules, other than allow, that cannot tell (they need a word only known
// when it runs).
func (p *Policy) ruleFor(argv []string, known int) (best, maybe *Rule) {
	for i := range p.Rules {
		r := &p.Rules[i]
		ok, unsure := r.match(argv, known)
		switch {
		case ok && r.Decision > strength(best):
			best = r
		case unsure && r.Decision != Allow && (maybe == nil || r.Decision > maybe.Decision):
			maybe = r
		}
	}
	if best == nil && p.ReadOnly && readOnly(argv, known) {
		best = &readOnlyRule
	}
	return best, maybe
}

// strength is the decision of r, weaker than any when there is none.
func strength(r *Rule) Decision {
	if r == nil {
		return -1
	}
	return r.Decision
}

// matched takes the decision of the rule that matched; an ask offers the
// prefix that would allow the command.
func (c *checker) matched(r *Rule, args []string, known int, text string) {
	c.raise(Verdict{Decision: r.Decision, Rule: r, Command: text,
		Reason: fmt.Sprintf("%s matches rule %s", quoteCmd(text), r)})
	if r.Decision == Ask {
		c.prefixes = appendNew(c.prefixes, suggest(args, known))
	}
}

// noneMatched takes Policy.Unmatched for a command no rule matches; an
// ask offers the prefix that would allow the command or, when there is
// none to offer, is one no prefix rule could answer.
func (c *checker) noneMatched(args []string, known int, text string) {
	d := c.p.Unmatched
	reason := fmt.Sprintf("no rule allows %s", quoteCmd(text))
	if d == Allow {
		reason = ""
	}
	c.raise(Verdict{Decision: d, Command: text, Reason: reason})
	if d != Ask {
		return
	}
	if p := suggest(args, known); p != "" {
		c.prefixes = appendNew(c.prefixes, p)
	} else {
		c.structural = true
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

// subcommand matches a word that looks like a subcommand (push, run:dev).
var subcommand = regexp.MustCompile(`^[a-z][a-z0-9_:-]*$`)

// quoteCmd quotes a command for a message.
func quoteCmd(s string) string { return "`" + s + "`" }

// appendNew appends s to list unless list holds it.
func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
