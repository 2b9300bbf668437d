package permission

import "fmt"

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

func quoteCmd(s string) string { return "`" + s + "`" }

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
