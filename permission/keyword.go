package permission

import (
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// keywordRE finds where a script may turn on bash's keyword mode (set -k,
// set -o keyword, shopt -so keyword, bash -k, or set with an argument
// only known when it runs), in which NAME=VALUE words after a command's
// name are assignments to its environment: set -k; git diff
// GIT_EXTERNAL_DIFF=prog runs prog. It looks at the source text, which
// holds the strings eval and bash -c run too; a false find only makes
// such words count as assignments.
var keywordRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)\b(set|shopt)\b[^\n]*(\s[-+][A-Za-z]*k|keyword|\$)|\b(bash|sh|dash|ash|zsh|ksh|mksh)\b[^\n]*\s-[A-Za-z]*k`)
})

// mayKeyword reports whether src may turn on keyword mode.
func mayKeyword(src string) bool { return keywordRE().MatchString(src) }

// keywordAssigns, in keyword mode, takes the NAME=VALUE words after a
// command's name out of its arguments, as bash does, and checks them as
// the assignments they are.
func (c *checker) keywordAssigns(words []*syntax.Word) []*syntax.Word {
	if !c.keyword || len(words) < 2 {
		return words
	}
	out := words[:1:1]
	for _, w := range words[1:] {
		if name, ok := assignWord(w); ok {
			s, static := staticWord(w, c.p.Home)
			_, v, _ := strings.Cut(s, "=")
			c.envAssign(name, v, static, 0)
			continue
		}
		out = append(out, w)
	}
	return out
}

// assignWord reports whether w reads as an assignment: an unquoted
// NAME= at its start (whatever follows).
func assignWord(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 0 {
		return "", false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return "", false
	}
	m := assignRE.FindString(lit.Value)
	if m == "" {
		return "", false
	}
	return m[:len(m)-1], true
}
