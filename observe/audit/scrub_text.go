package audit

import (
	"regexp"
	"strings"
)

// textRule finds secrets in a piece of text: each returns the ranges to
// redact, relative to the text.
type textRule func(text string) [][2]int

// textRules are ScrubText's, run on every literal piece of a command.
var textRules = []textRule{
	groupRule(regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s/?#@:'"]*:([^\s/?#@'"]*)@`), nil), // scheme://user:PASSWORD@
	groupRule(regexp.MustCompile(`(?i)\bhttps?://([^\s/?#@:'"]+)@`), nil),                         // https://TOKEN@
	headerRule,
	jsonRule,
	assignRule,
	groupRule(regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/-]+=*)`), looksLikeToken),
	groupRule(regexp.MustCompile(`(?:^|[\s'"])pass:([^\s'"]+)`), nil), // openssl -passin pass:SECRET
	groupRule(tokenShapes, nil),
	groupRule(regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(.*?)(?:-----END|$)`), nil),
}

// fallbackRules are for text that is not a parsed word: a command that
// does not parse, a description, an error.
var fallbackRules = []textRule{
	optionRule,
}

// text collects what textRules (and, for text that did not parse, the
// fallback rules) find in p.
func (s *scrubber) text(p piece, fallback bool) {
	if p.hole || p.text == "" {
		return
	}
	rules := textRules
	if fallback {
		rules = append(rules[:len(rules):len(rules)], fallbackRules...)
	}
	for _, rule := range rules {
		for _, r := range rule(p.text) {
			if !p.exact {
				s.add(p.off, p.end)
				return
			}
			s.add(p.off+r[0], p.off+r[1])
		}
	}
}

// groupRule redacts the first group of each match of re for which keep,
// if set, is true of the group's text.
func groupRule(re *regexp.Regexp, keep func(string) bool) textRule {
	return func(text string) [][2]int {
		var out [][2]int
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			g := m[0:2] // a pattern without a group: all of the match
			if len(m) >= 4 && m[2] >= 0 {
				g = m[2:4]
			}
			if keep == nil || keep(text[g[0]:g[1]]) {
				out = append(out, [2]int{g[0], g[1]})
			}
		}
		return out
	}
}

// looksLikeToken tells a bearer token from a word ("a bearer token"): it
// has a digit, or is long.
func looksLikeToken(s string) bool {
	return len(s) >= 20 || strings.ContainsAny(s, "0123456789")
}

// tokenShapes are tokens known by their shape alone.
var tokenShapes = regexp.MustCompile(`\b(?:` + strings.Join([]string{
	`gh[pousr]_[A-Za-z0-9]{20,}`, `github_pat_[A-Za-z0-9_]{20,}`, // GitHub
	`glpat-[A-Za-z0-9_-]{20,}`,                                      // GitLab
	`sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}`,                          // OpenAI, Anthropic
	`xox[abposr]-[A-Za-z0-9-]{10,}`,                                 // Slack
	`(?:AKIA|ASIA)[0-9A-Z]{16}`,                                     // AWS access key ids
	`AIza[0-9A-Za-z_-]{35}`,                                         // Google API keys
	`npm_[A-Za-z0-9]{36}`,                                           // npm
	`hf_[A-Za-z0-9]{30,}`,                                           // Hugging Face
	`[sr]k_live_[A-Za-z0-9]{20,}`,                                   // Stripe
	`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`, // JWT
}, "|") + `)`)

// headerLine is a "Name: value" at the start of the text or of a line,
// or after '=' (git -c http.extraHeader=…) or a quote.
var headerLine = regexp.MustCompile(`(?m)(?:^|^-H|[='"])[ \t]*([A-Za-z][A-Za-z0-9_-]*)[ \t]*:[ \t]*([^'"\r\n]*)`)

// authScheme is the scheme that starts an Authorization header's value,
// which is kept: Authorization: Bearer [REDACTED].
var authScheme = regexp.MustCompile(`(?i)^(?:bearer|basic|token|digest|negotiate|ntlm|aws4-hmac-sha256)(?: +|$)`)

// headerRule redacts the value of a header with a secret's name
// (Authorization, Cookie, X-Api-Key; password: in YAML).
func headerRule(text string) [][2]int {
	var out [][2]int
	for _, m := range headerLine.FindAllStringSubmatchIndex(text, -1) {
		name, from, to := strings.ToLower(text[m[2]:m[3]]), m[4], m[5]
		to = from + len(strings.TrimRight(text[from:to], " \t"))
		if from == to || !secretHeader(name) {
			continue
		}
		if name == "authorization" || name == "proxy-authorization" {
			from += len(authScheme.FindString(text[from:to]))
		}
		if from < to {
			out = append(out, [2]int{from, to})
		}
	}
	return out
}

// secretHeader reports whether a header (lower case) carries a secret.
func secretHeader(name string) bool {
	switch name {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return secretName(name)
}

// jsonPair is a "name": "value" pair, its quotes escaped or not.
var jsonPair = regexp.MustCompile(`\\?"([A-Za-z_][A-Za-z0-9_.-]*)\\?"\s*:\s*\\?"((?:[^"\\]|\\[^"])*)\\?"`)

// jsonRule redacts the string values of JSON keys with a secret's name.
func jsonRule(text string) [][2]int {
	var out [][2]int
	for _, m := range jsonPair.FindAllStringSubmatchIndex(text, -1) {
		if secretName(text[m[2]:m[3]]) {
			out = append(out, [2]int{m[4], m[5]})
		}
	}
	return out
}

// assignment is NAME=value (value quoted or not) after the start, a
// space or any character that is not part of a name.
var assignment = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_.-]*)=(?:"([^"\n]*)"|'([^'\n]*)'|([^\s'"&;|,)]+))`)

// assignRule redacts the values of NAME=value pairs with a secret's name
// (.env lines, query strings, docker -e, --password=x). Matches may
// overlap: in x=TOKEN=v, the search goes on after each name.
func assignRule(text string) [][2]int {
	var out [][2]int
	for at := 0; at < len(text); {
		m := assignment.FindStringSubmatchIndex(text[at:])
		if m == nil {
			break
		}
		if secretName(text[at+m[2] : at+m[3]]) {
			for g := 4; g < len(m); g += 2 {
				if m[g] >= 0 {
					out = append(out, [2]int{at + m[g], at + m[g+1]})
				}
			}
		}
		at += m[3]
	}
	return out
}

// optionPair is --name value in text that did not parse as a command.
var optionPair = regexp.MustCompile(`(?:^|\s)--([A-Za-z][A-Za-z0-9-]*)\s+(?:'([^']*)'|"([^"]*)"|([^\s'"-]\S*))`)

// optionRule redacts the value of an option with a secret's name.
func optionRule(text string) [][2]int {
	var out [][2]int
	for _, m := range optionPair.FindAllStringSubmatchIndex(text, -1) {
		if !secretName(text[m[2]:m[3]]) {
			continue
		}
		for g := 4; g < len(m); g += 2 {
			if m[g] >= 0 {
				out = append(out, [2]int{m[g], m[g+1]})
			}
		}
	}
	return out
}
