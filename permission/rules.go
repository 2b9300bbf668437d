package permission

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/shell"
)

// Decision is what happens to a command. Deny wins over Ask, which wins
// over Allow.
type Decision int

// The decisions, in increasing strength.
const (
	Allow Decision = iota
	Ask
	Deny
)

// String is the decision as rules and messages write it.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// ParseDecision reads "allow", "ask" or "deny".
func ParseDecision(s string) (Decision, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "ask":
		return Ask, nil
	case "deny":
		return Deny, nil
	}
	return 0, fmt.Errorf("unknown decision %q (want allow, ask or deny)", s)
}

// Rule matches simple commands by the prefix of their arguments.
type Rule struct {
	Decision Decision
	// Pattern is the argv prefix, written as shell words: "git status",
	// "npm run *", "rm -rf". A word may hold glob characters (path.Match:
	// "test:*"); a last word "*" matches any rest, even none. The first
	// word without a slash matches the command's base name ("rm" matches
	// /bin/rm).
	Pattern string
	// Source says where the rule comes from, for the messages that name it.
	Source string

	words []string // the pattern's words, but its exclusions
	lead  []string // the words before the first option or exclusion
	opts  []string // the options after lead
	ops   []string // the other words after lead
	excl  []string // the words written !WORD, without the !
}

// NewRule parses a pattern.
func NewRule(d Decision, pattern, source string) (Rule, error) {
	words, err := splitPattern(pattern)
	if err != nil {
		return Rule{}, fmt.Errorf("rule %q: %w", pattern, err)
	}
	if len(words) == 0 {
		return Rule{}, fmt.Errorf("rule %q: no command", pattern)
	}
	for i, w := range words {
		if _, err := path.Match(w, ""); err != nil {
			words[i] = escapeGlob(w) // not a pattern: the word itself ("[")
		}
	}
	r := Rule{Decision: d, Pattern: pattern, Source: source}
	r.split(words)
	if len(r.words) == 0 {
		return Rule{}, fmt.Errorf("rule %q: no command", pattern)
	}
	return r, nil
}

// splitPattern reads a pattern's shell words (quotes removed; a
// variable is empty).
func splitPattern(pattern string) ([]string, error) {
	return shell.Fields(pattern, func(string) string { return "" })
}

// split sorts a pattern's words into the parts matching uses (see
// spelling.go).
func (r *Rule) split(words []string) {
	r.lead = nil
	for i, w := range words {
		switch {
		case strings.HasPrefix(w, "!") && len(w) > 1 && i > 0:
			r.excl = append(r.excl, strings.TrimPrefix(w, "!"))
			continue
		case i > 0 && (r.lead != nil || isOption(w)):
			if r.lead == nil {
				r.lead = slices.Clone(r.words)
			}
			if isOption(w) {
				r.opts = append(r.opts, w)
			} else {
				r.ops = append(r.ops, w)
			}
		}
		r.words = append(r.words, w)
	}
	if r.lead == nil {
		r.lead = r.words
	}
}

// isOption reports whether a pattern's word is an option.
func isOption(w string) bool { return len(w) > 1 && strings.HasPrefix(w, "-") }

// NewRules parses patterns of one decision from one source.
func NewRules(d Decision, source string, patterns ...string) ([]Rule, error) {
	var out []Rule
	for _, p := range patterns {
		r, err := NewRule(d, p, source)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// String is how messages name the rule: `deny "rm -rf" (config.json)`.
func (r *Rule) String() string {
	s := fmt.Sprintf("%s %q", r.Decision, r.Pattern)
	if r.Source != "" {
		s += " (" + r.Source + ")"
	}
	return s
}

// escapeGlob makes a word match only itself.
func escapeGlob(w string) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ { // by byte: a word need not be UTF-8
		if strings.IndexByte(`*?[\`, w[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(w[i])
	}
	return b.String()
}
