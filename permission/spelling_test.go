package permission

import (
	"strings"
	"testing"
)

// TestRulesMeanEverySpelling: a deny or ask rule with options matches the
// options however bash and the program let a command spell them; an
// allow rule's exclusions keep it from every spelling.
func TestRulesMeanEverySpelling(t *testing.T) {
	tests := []struct {
		rules []string // "decision pattern"
		cmd   string
		want  Decision
	}{
		// rm -rf, by every spelling, even with rm allowed.
		{[]string{"allow rm", "deny rm -rf"}, "rm -rf x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm -fr x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm -r -f x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm -f -R x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm -Rf x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm --recursive --force x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm --rec --forc x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm x -rf", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "/bin/rm -v -rf x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm -ivrf x", Deny},
		{[]string{"allow rm", "deny rm -rf"}, "rm -r x", Allow},
		{[]string{"allow rm", "deny rm -rf"}, "rm -f x", Allow},
		{[]string{"allow rm", "deny rm -rf"}, "rm x", Allow},
		{[]string{"allow rm", "deny rm -rf"}, "rm -- -rf", Allow}, // a file named -rf
		{[]string{"allow rm", "deny rm -rf"}, "rm $opts x", Ask},
		{[]string{"allow rm", "deny rm --recursive"}, "rm -R x", Deny},
		// git push --force, by every spelling, refspec + too.
		{[]string{"allow git push", "deny git push --force"}, "git push --force", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push -f", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push -fu origin main", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push origin +main", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push origin +HEAD:main", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push origin HEAD --force", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push --force-with-lease", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push --force-with-lease=main:abc origin", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push --force-if-includes", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push --forc", Deny},
		{[]string{"allow git push", "deny git push --force"}, "git push origin main", Allow},
		{[]string{"allow git push", "deny git push --force"}, "git push -u origin main", Allow},
		{[]string{"allow git push", "deny git push --force"}, "git push --repo -f origin", Allow}, // -f is --repo's value
		{[]string{"allow git push", "deny git push --delete"}, "git push origin :main", Deny},
		{[]string{"allow git push", "deny git push --delete"}, "git push -d origin x", Deny},
		{[]string{"ask git push --force"}, "git push -f origin", Ask},
		// git branch -D is --delete --force.
		{[]string{"allow git branch", "deny git branch -D"}, "git branch -D x", Deny},
		{[]string{"allow git branch", "deny git branch -D"}, "git branch -d -f x", Deny},
		{[]string{"allow git branch", "deny git branch -D"}, "git branch --delete --force x", Deny},
		{[]string{"allow git branch", "deny git branch -D"}, "git branch -df x", Deny},
		{[]string{"allow git branch", "deny git branch -D"}, "git branch -d x", Allow},
		// Programs without a table: clusters and long options as written.
		{[]string{"allow foo", "deny foo -rf"}, "foo -fr x", Deny},
		{[]string{"allow foo", "deny foo -rf"}, "foo -r -f x", Deny},
		{[]string{"allow foo", "deny foo --force"}, "foo --force=yes", Deny},
		{[]string{"allow foo", "deny foo --force"}, "foo --forc", Deny},
		{[]string{"allow foo", "deny foo -rf"}, "foo -r x", Allow},
		// Operands after the options, in order.
		{[]string{"allow git push", "deny git push --force origin main"}, "git push -f origin main", Deny},
		{[]string{"allow git push", "deny git push --force origin main"}, "git push -f origin dev", Allow},
		// Exclusions: allow git push, never with --force in any spelling.
		{[]string{"allow git push !--force"}, "git push origin main", Allow},
		{[]string{"allow git push !--force"}, "git push -f origin main", Ask},
		{[]string{"allow git push !--force"}, "git push origin +main", Ask},
		{[]string{"allow git push !--force"}, "git push --force-with-lease", Ask},
		{[]string{"allow git push !--force"}, "git push $args", Ask},
		{[]string{"allow git push !--force !main"}, "git push origin main", Ask},
		{[]string{"allow rm !-r"}, "rm -fR x", Ask},
		{[]string{"allow rm !-r"}, "rm -f x", Allow},
	}
	for _, tt := range tests {
		p := &Policy{Unmatched: Ask}
		for _, r := range tt.rules {
			d, pattern, _ := strings.Cut(r, " ")
			dec, err := ParseDecision(d)
			if err != nil {
				t.Fatal(err)
			}
			rule, err := NewRule(dec, pattern, "test")
			if err != nil {
				t.Fatal(err)
			}
			p.Rules = append(p.Rules, rule)
		}
		if v := p.Check(tt.cmd, "/w", "/w"); v.Decision != tt.want {
			t.Errorf("rules %q: Check(%q) = %v (%s), want %v", tt.rules, tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}
