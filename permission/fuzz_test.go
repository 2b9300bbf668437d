package permission

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzCheckNeverPanics: any input gets a verdict.
func FuzzCheckNeverPanics(f *testing.F) {
	for _, tt := range checkTests {
		f.Add(tt.cmd)
	}
	for _, cmd := range append(everydayReadOnly[:40:40], notReadOnly[:40]...) {
		f.Add(cmd)
	}
	p := testPolicy(f)
	p.ReadOnly = true
	f.Fuzz(func(t *testing.T, cmd string) {
		v := p.Check(cmd, "/w", "/w")
		if v.Decision < Allow || v.Decision > Deny || (v.Decision != Allow && v.Reason == "") {
			t.Errorf("%q: %+v", cmd, v)
		}
	})
}

// hidings are the places a command can hide in another; %s is where it
// goes.
var hidings = []string{
	"%s", "A && %s", "A || %s", "A; %s", "A | %s", "A & %s", "(%s)", "{ %s; }",
	"A $(%s)", "A `%s`", `A "$(%s)"`, "A <(%s)", "A >(%s)", "if %s; then A; fi", "while %s; do A; done",
	"f() { %s; }; f", "eval '%s'", "bash -c '%s'", "sh -c '%s'", "env X=1 %s", "command %s", "exec %s",
	"nohup %s", "timeout 5 %s", "xargs %s", "trap '%s' EXIT", "x=$(%s)", "A ${x:-$(%s)}",
	"cat <<E\n$(%s)\nE", "A\n%s", "A \\\n; %s", "time %s", "! %s", "watch '%s'", "find . -exec %s \\;",
}

// FuzzDeniedNeverAllowed: a denied command hidden anywhere in a command,
// among words the fuzzer picks (quoted so that they stay words), never
// gets allow.
func FuzzDeniedNeverAllowed(f *testing.F) {
	f.Add(0, "ls", "x")
	f.Add(5, "echo hi", "-rf /")
	f.Add(17, "git status", "~")
	p := testPolicy(f)
	f.Fuzz(func(t *testing.T, where int, filler, arg string) {
		if where < 0 {
			where = -where
		}
		h := hidings[where%len(hidings)]
		a, err := syntax.Quote(filler, syntax.LangBash)
		if err != nil {
			return
		}
		q, err := syntax.Quote(arg, syntax.LangBash)
		if err != nil {
			return
		}
		denied := "rm " + q
		if strings.Contains(h, "'%s'") {
			// Inside single quotes: quote for the inner shell, which
			// reads the string again.
			denied = strings.ReplaceAll("rm "+q, "'", `'\''`)
		}
		cmd := strings.ReplaceAll(strings.Replace(h, "%s", denied, 1), "A", "echo "+strings.ReplaceAll(a, "%", "%%"))
		cmd = strings.ReplaceAll(cmd, "%%", "%")
		if v := p.Check(cmd, "/w", "/w"); v.Decision == Allow {
			t.Errorf("%q was allowed, though it runs rm (%s)", cmd, v.Reason)
		}
	})
}

// FuzzNotReadOnlyStaysAsked: a command the built-in tables must not
// allow is not allowed with one more word, whatever it is.
func FuzzNotReadOnlyStaysAsked(f *testing.F) {
	f.Add(0, "x")
	f.Add(7, "--")
	f.Add(30, "-n")
	p := readOnlyPolicy()
	f.Fuzz(func(t *testing.T, i int, word string) {
		q, err := syntax.Quote(word, syntax.LangBash)
		if err != nil {
			return
		}
		cmd := notReadOnly[(i%len(notReadOnly)+len(notReadOnly))%len(notReadOnly)] + " " + q
		if v := p.Check(cmd, "/w", "/w"); v.Decision == Allow {
			t.Errorf("%q was allowed (%s)", cmd, v.Reason)
		}
	})
}

// FuzzHintsAllow: for a command of any words (quoted so that they stay
// words), every prefix the verdict offers parses as a rule, and allowing
// them all allows the command.
func FuzzHintsAllow(f *testing.F) {
	for i, tt := range hintCommands {
		f.Add(i, tt.cmd, "x")
	}
	f.Add(0, "print('(a)')", "!x")
	f.Add(3, "*", "\x1b[2K\u202e")
	heads := []string{"python3 -c", "node -e", "mkdir -p", "git -c", "./build.sh", "sed -i", "npm"}
	f.Fuzz(func(t *testing.T, i int, a, b string) {
		qa, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			return
		}
		qb, err := syntax.Quote(b, syntax.LangBash)
		if err != nil {
			return
		}
		cmd := heads[(i%len(heads)+len(heads))%len(heads)] + " " + qa + " " + qb
		p := &Policy{Unmatched: Ask}
		v := p.Check(cmd, "/w", "/w")
		if v.Decision != Ask || len(v.Prefixes) == 0 {
			return // what cannot be known statically offers none
		}
		for _, pattern := range v.Prefixes {
			r, err := NewRule(Allow, pattern, "hint")
			if err != nil {
				t.Fatalf("%q: the hint %q does not parse: %v", cmd, pattern, err)
			}
			p.Rules = append(p.Rules, r)
		}
		if v2 := p.Check(cmd, "/w", "/w"); v2.Decision != Allow {
			t.Errorf("%q: allowed %q, it is %v (%s)", cmd, v.Prefixes, v2.Decision, v2.Reason)
		}
	})
}
