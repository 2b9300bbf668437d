package permission

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// matchCommand decides by the rules on a simple command that runs no
// other, in each of the forms rules read it in (see forms), and asks
// about the options it has that run a program no allow rule names (see
// runners.go).
func (c *checker) matchCommand(base string, args []string, known int, text string, depth int) {
	forms := c.forms(base, args, known)
	c.runnerValues(args, known, depth)
	best, maybe, f := c.p.ruleForForms(forms)
	if maybe != nil && maybe.Decision > strength(best) {
		c.unknowable(text, fmt.Sprintf("it may match rule %s: an argument is only known when it runs", maybe))
		return
	}
	hint := suggestForm(forms)
	if best == nil {
		f = hint
	}
	if strength(best) < Ask && (best != nil || c.p.Unmatched != Deny) && c.uncoveredRunners(best, f, text) {
		return
	}
	if best != nil {
		c.matched(best, hint.args, hint.known, text)
	} else {
		c.noneMatched(hint.args, hint.known, text)
	}
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
	best, maybe, _ = p.ruleForForms([]form{{argv, known, true, true}})
	return best, maybe
}

// ruleForForms is ruleFor over the forms of one command: deny and ask
// rules read each form, allow rules and the built-in tables those that
// allowOK marks, and what the user granted (which answers an ask, never
// a deny) the same. f is the form best matched in.
func (p *Policy) ruleForForms(forms []form) (best, maybe *Rule, f form) {
	f = forms[0]
	for _, fm := range forms {
		b, m := p.rulesOn(fm)
		if strength(b) > strength(best) {
			best, f = b, fm
		}
		if m != nil && (maybe == nil || m.Decision > maybe.Decision) {
			maybe = m
		}
	}
	if strength(best) >= Deny {
		return best, maybe, f
	}
	for _, fm := range forms {
		if g := p.granted(fm); g != nil {
			return g, maybe, fm
		}
	}
	return best, maybe, f
}

// rulesOn is ruleFor on one form, what the user granted aside.
func (p *Policy) rulesOn(f form) (best, maybe *Rule) {
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Decision == Allow && !f.allowOK {
			continue
		}
		ok, unsure := r.match(f.args, f.known)
		switch {
		case ok && r.Decision > strength(best):
			best = r
		case ok && r.Decision == Allow && best.Decision == Allow && coverage(r) > coverage(best):
			best = r // the one that names more of the command (its options that run programs)
		case unsure && r.Decision != Allow && (maybe == nil || r.Decision > maybe.Decision):
			maybe = r
		}
	}
	if best == nil && f.allowOK && p.ReadOnly && readOnly(f.args, f.known) {
		best = &readOnlyRule
	}
	return best, maybe
}

// granted is the first rule the user granted that matches f.
func (p *Policy) granted(f form) *Rule {
	if !f.allowOK {
		return nil
	}
	for i := range p.Granted {
		if ok, _ := p.Granted[i].match(f.args, f.known); ok {
			return &p.Granted[i]
		}
	}
	return nil
}

// suggestForm is the form whose prefix an ask offers: the last marked
// hint that an allow rule may match (git log for git --no-pager log; git
// -c a=b log for git -P -c a=b log), else the command as written.
func suggestForm(forms []form) form {
	f := forms[0]
	for _, fm := range forms[1:] {
		if fm.hint && fm.allowOK {
			f = fm
		}
	}
	return f
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
	if c.passedOn > 0 {
		return // what an option runs answers to the rule that names the option
	}
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
// beyond them cannot tell, which maybe says. An allow rule matches by
// prefix; a deny or ask rule with options by its options in any
// spelling (see spelling.go); and no rule matches a command that has
// one of its exclusions.
func (r *Rule) match(argv []string, known int) (ok, maybe bool) {
	if r.Decision == Allow || len(r.opts) == 0 {
		ok, maybe = r.prefixMatch(r.words, argv, known)
	} else {
		ok, maybe = r.spelledMatch(argv, known)
	}
	if ok && len(r.excl) > 0 {
		switch {
		case r.excludes(argv[:known]):
			return false, false
		case known < len(argv):
			// A word only known when it runs may be an exclusion.
			return false, r.Decision != Allow
		}
	}
	return ok, maybe
}

// spelledMatch matches a deny or ask rule with options: its leading words
// by prefix, then each of its options in any spelling and its operands
// in order.
func (r *Rule) spelledMatch(argv []string, known int) (ok, maybe bool) {
	if ok, maybe := r.prefixMatch(r.lead, argv, known); !ok {
		return false, maybe
	}
	s := r.spelling(argv[:known])
	sp := spell(s, argv[len(r.lead):known])
	for _, o := range ruleOptions(s, r.opts) {
		if !sp.has(s, o) {
			return false, known < len(argv)
		}
	}
	if !operandsMatch(r.ops, sp.operands) {
		return false, known < len(argv)
	}
	return true, false
}

// spelling is the spelling of the program the rule's leading words name
// in argv, if the rule names the whole of it (git push, not git alone).
func (r *Rule) spelling(argv []string) *spelling {
	if s, n := spellingFor(argv); n == len(r.lead) {
		return s
	}
	return nil
}

// excludes reports whether argv has one of the rule's exclusions: an
// option in any spelling, or an operand.
func (r *Rule) excludes(argv []string) bool {
	n := min(len(r.lead), len(argv))
	s := r.spelling(argv)
	sp := spell(s, argv[n:])
	for _, x := range r.excl {
		if isOption(x) {
			for _, o := range ruleOptions(s, []string{x}) {
				if sp.has(s, o) {
					return true
				}
			}
			continue
		}
		for _, op := range sp.operands {
			if ok, _ := path.Match(x, op); ok {
				return true
			}
		}
	}
	return false
}

// ruleOptions are the options a rule's option words require, by the
// names s knows them by: a cluster (-rf) is each of its options.
func ruleOptions(s *spelling, words []string) []string {
	var out []string
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "--"):
			name, _, _ := strings.Cut(w, "=")
			out = append(out, name)
		case s == nil || s.names[w] != "":
			out = append(out, w)
		default:
			for j := 1; j < len(w); j++ {
				o := s.name("-" + w[j:j+1])
				out = append(out, o)
				if s.valued[o] {
					break // the rest is its value
				}
			}
		}
	}
	return out
}

// operandsMatch reports whether a rule's operands match the command's
// first ones, in order (a last * matches any rest).
func operandsMatch(rule, cmd []string) bool {
	for i, w := range rule {
		if w == "*" && i == len(rule)-1 {
			return true
		}
		if i >= len(cmd) {
			return false
		}
		if ok, _ := path.Match(w, cmd[i]); !ok {
			return false
		}
	}
	return true
}

// prefixMatch matches words against argv's leading words.
func (r *Rule) prefixMatch(words, argv []string, known int) (ok, maybe bool) {
	for i, w := range words {
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

// suggest is the narrowest useful prefix to allow for a command, written
// as a rule's pattern (see Pattern): its name; for a command with
// subcommands, the words up to the subcommand (git -c x=y push); then the
// options that follow, up to the first operand (sed -i, git push
// --force). An interpreter is offered with the script it runs, or
// (running code given inline) the whole command. A name given with a
// path (./build.sh) stays as given: an allowed bare name is the program
// PATH finds.
func suggest(args []string, known int) string {
	if known == 0 {
		return ""
	}
	args = args[:known]
	name := args[0]
	if !strings.Contains(name, "/") {
		name = path.Base(name)
	}
	return Pattern(append([]string{name}, args[1:suggestEnd(path.Base(name), args)]...))
}

// suggestEnd is where the words suggest offers end.
func suggestEnd(name string, args []string) int {
	i := 1
	switch {
	case interpreters[name] && len(args) > 1:
		if isOption(args[1]) {
			return len(args)
		}
		return 2
	case withSubcommands[name]:
		for i < len(args) && !subcommand.MatchString(args[i]) {
			i++
		}
		i = min(i+1, len(args))
	}
	for i < len(args) && isOption(args[i]) {
		i++
	}
	return i
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
