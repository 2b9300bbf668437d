package permission

import (
	"strings"
	"testing"
)

// testPolicy is the rule set of the table: a few allowed read-only
// commands, rm, curl and sudo denied, git push asked about.
func testPolicy(t testing.TB) *Policy {
	p := &Policy{Unmatched: Ask, Home: "/home/u"}
	for _, r := range []struct {
		d       Decision
		pattern string
	}{
		{Allow, "ls"}, {Allow, "cat"}, {Allow, "echo"}, {Allow, "git status"}, {Allow, "git diff"},
		{Allow, "go test"}, {Allow, "npm run *"}, {Allow, "true"}, {Allow, "grep"},
		{Ask, "git push"},
		{Deny, "rm"}, {Deny, "curl"}, {Deny, "sudo"}, {Deny, "git push --force"},
	} {
		rule, err := NewRule(r.d, r.pattern, "test")
		if err != nil {
			t.Fatal(err)
		}
		p.Rules = append(p.Rules, rule)
	}
	return p
}

var checkTests = []struct {
	cmd  string
	want Decision
}{
	// Plain commands and prefixes.
	{"ls -la", Allow},
	{"ls -la $HOME", Allow}, // what follows a rule's prefix is free
	{"git status --short", Allow},
	{"git push origin main", Ask},
	{"git push --force origin main", Deny},
	{"npm run build", Allow},
	{"npm install", Ask},
	{"go test ./...", Allow},
	{"go test -run X ./...", Allow},
	{"go build", Ask},
	{"rm -rf /", Deny},
	{"/bin/rm x", Deny},
	{"./rm x", Deny},
	{"true", Allow},

	// Every side of every list, pipe, group and subshell.
	{"ls && rm x", Deny},
	{"ls || rm x", Deny},
	{"ls; rm x", Deny},
	{"ls | rm x", Deny},
	{"ls |& rm x", Deny},
	{"ls & rm x", Deny},
	{"(rm x)", Deny},
	{"{ rm x; }", Deny},
	{"! rm x", Deny},
	{"time rm x", Deny},
	{"coproc rm x", Deny},
	{"if true; then rm x; fi", Deny},
	{"while rm x; do :; done", Deny},
	{"for f in a b; do rm $f; done", Deny},
	{"case x in x) rm y;; esac", Deny},
	{"select x in a; do rm y; done", Deny},
	{"ls\nrm x", Deny},
	{"ls \\\n&& rm x", Deny},

	// Substitutions anywhere.
	{"echo $(rm -rf ~)", Deny},
	{"echo `rm x`", Deny},
	{`echo "$(rm x)"`, Deny},
	{`echo "a $(echo b $(rm x))"`, Deny},
	{"cat <(rm x)", Deny},
	{"ls > >(rm x)", Deny},
	{"echo ${x:-$(rm y)}", Deny},
	{"a[$(rm x)]=1", Deny},
	{"x=$(rm y)", Deny},
	{"[[ -n $(rm x) ]]", Deny},
	{"(( $(rm x) ))", Deny},
	{"cat <<EOF\n$(rm x)\nEOF", Deny},
	{"cat <<'EOF'\n$(rm x)\nEOF", Allow}, // a quoted here-document is text
	{`cat <<< "$(rm x)"`, Deny},

	// Quoting: text, not commands.
	{"echo 'a; rm x'", Allow},
	{`echo "a; rm x"`, Allow},
	{`echo a\;rm x`, Allow},
	{"echo '$(rm x)'", Allow},

	// Quoting that still names rm.
	{`r\m x`, Deny},
	{`'r'm x`, Deny},
	{`"rm" x`, Deny},
	{`"/bin/"rm x`, Deny},

	// Names only known when it runs.
	{"$CMD x", Ask},
	{"${CMD} x", Ask},
	{`"$C" x`, Ask},
	{"$(echo rm) x", Ask}, // the name comes from a substitution
	{`$'\x72m' x`, Ask},
	{"/bin/r? x", Ask},
	{"{rm,-rf,x}", Ask},
	{"git $SUB", Ask}, // may be git push
	{"git status $X", Allow},

	// Strings that run: eval, bash -c, sh -c, trap, alias, watch, find -exec.
	{"eval 'rm x'", Deny},
	{"eval rm x", Deny},
	{`eval "$CMD"`, Ask},
	{"eval 'ls'", Allow},
	{"bash -c 'rm x'", Deny},
	{"bash -lc 'rm x'", Deny},
	{`sh -c "ls; rm x"`, Deny},
	{"bash -c 'ls'", Allow},
	{`bash -c "$X"`, Ask},
	{"bash -c 'bash -c \"eval rm\"'", Deny},
	{"bash script.sh", Ask},
	{"trap 'rm -rf ~' EXIT", Deny},
	{"alias ls='rm -rf ~'", Deny},
	{"shopt -s expand_aliases\nalias x='rm -rf ~'\nx", Deny},
	{"watch 'rm x'", Deny},
	{`find . -name '*.o' -exec rm {} \;`, Deny},
	{"find . -execdir rm {} +", Deny},

	// Functions defined and called at once.
	{"f() { rm -rf ~; }; f", Deny},
	{"function g { ls; }; g", Ask}, // g itself is no allowed command

	// Wrappers.
	{"env X=1 rm x", Deny},
	{"env LC_ALL=C ls", Allow}, // a variable known harmless (see attack4_programs_test.go)
	{"command rm x", Deny},
	{"builtin eval 'rm x'", Deny},
	{"exec rm x", Deny},
	{"nohup rm x &", Deny},
	{"nohup ls &", Allow},
	{"timeout 5 rm x", Deny},
	{"timeout -s KILL 5 rm x", Deny},
	{"timeout 5 ls", Allow},
	{"nice -n 10 rm x", Deny},
	{"xargs rm < list", Deny},
	{"xargs -n 1 rm < list", Deny},
	{"sudo -u root rm x", Deny},
	{"sudo ls", Deny},
	{"stdbuf -o0 rm x", Deny},
	{"env -S 'rm x'", Ask},
	{"timeout 5 $X", Ask},

	// Variables that change what runs.
	{"PATH=/tmp/evil git status", Ask},
	{"export PATH=/tmp:$PATH; git status", Ask},
	{"declare -x LD_PRELOAD=/tmp/x.so; ls", Ask},
	{"env PATH=/tmp ls", Ask},
	{"GIT_SSH_COMMAND='rm -rf ~' git status", Ask},
	{"LANG=C ls", Allow},

	// Look-alikes.
	{"ｒｍ x", Ask},
	{"rм x", Ask},

	// Writes outside the workspace.
	{"echo hi > out.txt", Allow},
	{"echo hi > /w/sub/x", Allow},
	{"echo hi > /etc/passwd", Ask},
	{"echo hi >> /tmp/x", Ask},
	{"echo hi &> ~/x", Ask},
	{"echo hi > ../x", Ask},
	{"echo hi > /dev/null", Allow},
	{"ls 2>&1", Allow},
	{"ls >&2", Allow},
	{"echo x > $F", Ask},
	{"cd /etc && echo x > passwd", Ask},
	{"cat < /etc/passwd", Allow}, // reading

	// Arithmetic runs what a variable's value holds (a[$(…)]).
	{"x='a[$(rm -rf ~)]'; echo $((x))", Ask},
	{"x=$(cat f); echo $((x))", Ask},
	{"read x < f; echo $((x + 1))", Ask},
	{"echo $((HOME))", Ask},
	{"[[ $x -eq 1 ]] && echo y", Ask},
	{"echo ${a[$x]}", Ask},
	{"let y=x+1", Ask},
	{"for ((i=0; i<3; i++)); do echo $i; done", Allow},
	{"n=5; echo $((n * 2))", Allow},
	{"echo $((2 + 3))", Allow},

	// Prompt expansion runs command substitutions in the value.
	{"x='$(rm -rf ~)'; echo ${x@P}", Ask},
	{"echo ${x@Q}", Allow},

	// Aliases and the command hash table through their arrays.
	{"BASH_ALIASES[ls]='rm -rf ~'; ls", Ask},
	{"BASH_CMDS[ls]=/bin/rm; ls x", Ask},

	// >& with a file name writes to it.
	{"echo x >& /etc/passwd", Ask},
	{"echo x >&2", Allow},
	{"echo x >&-", Allow},

	// read and getopts fill plain variables.
	{"read -r -p 'name? ' answer < /dev/null; echo $answer", Ask}, // read itself is not allowed here
	{"read PATH < f; ls", Ask},

	// git's harmless global options before the subcommand.
	{"git --no-pager diff", Allow},
	{"git -P log", Ask}, // log is not allowed here
	{"git -C sub status", Allow},
	{"git -C /tmp/x status", Ask},
	{"git -c core.fsmonitor=evil status", Ask},

	// Naming a variable without a value changes nothing.
	{"export PATH; ls", Allow},
	{"declare -p PATH", Allow},

	// A program found by path is not the allowed one.
	{"./ls", Ask},
	{"/tmp/evil/ls", Ask},

	// What does not parse.
	{"ls 'unterminated", Ask},
	{"ls )", Ask},
	{"echo $((", Ask},
}

func TestCheck(t *testing.T) {
	p := testPolicy(t)
	for _, tt := range checkTests {
		v := p.Check(tt.cmd, "/w", "/w")
		if v.Decision != tt.want {
			t.Errorf("%q: %v (%s), want %v", tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}

// TestCheckReasons: a verdict names the rule and the command that decided.
func TestCheckReasons(t *testing.T) {
	p := testPolicy(t)
	tests := []struct {
		cmd, reason string
		prefixes    []string
	}{
		{"ls && rm -rf x", "`rm -rf x` matches rule deny \"rm\" (test)", nil},
		{"git push origin", "`git push origin` matches rule ask \"git push\" (test)", []string{"git push"}},
		{"npm install left-pad && make build", "no rule allows `npm install left-pad`", []string{"npm install", "make build"}},
		{"python3 x.py", "no rule allows `python3 x.py`", []string{"python3 x.py"}},
		{"$X y", "its command name is only known when it runs", nil},
		{"echo > /etc/x", "it writes to /etc/x, outside the workspace /w", nil},
		{"read -p 'name? ' answer", "no rule allows `read -p name?  answer`", []string{"read -p"}}, // not a variable it fills
		// The narrowest prefix that allows it: options up to the first
		// operand, and the words before a subcommand.
		{"sed -i s/a/b/ f", "no rule allows `sed -i s/a/b/ f`", []string{"sed -i"}},
		{"git -c x=y push origin", "`git -c x=y push origin` matches rule ask \"git push\" (test)", []string{"git -c x=y push"}},
		{"python3 -c 'import os'", "no rule allows `python3 -c import os`", []string{"python3 -c 'import os'"}},
		{"rm -rf build", "`rm -rf build` matches rule deny \"rm\" (test)", nil},
	}
	for _, tt := range tests {
		v := p.Check(tt.cmd, "/w", "/w")
		if v.Reason != tt.reason || strings.Join(v.Prefixes, "|") != strings.Join(tt.prefixes, "|") {
			t.Errorf("%q: reason %q, prefixes %q; want %q, %q", tt.cmd, v.Reason, v.Prefixes, tt.reason, tt.prefixes)
		}
	}
}

// TestGranted: what the user granted answers an ask rule, the unmatched
// ask and the built-in tables' ask, but not a deny rule, nor an ask about
// what cannot be known.
func TestGranted(t *testing.T) {
	p := testPolicy(t) // ask "git push", deny "git push --force"
	p.ReadOnly = true
	for _, g := range []string{"git push", "npm install", "sort -o"} {
		r, err := NewRule(Allow, g, "granted")
		if err != nil {
			t.Fatal(err)
		}
		p.Granted = append(p.Granted, r)
	}
	for _, tt := range []struct {
		cmd  string
		want Decision
	}{
		{"git push origin main", Allow},
		{"npm install left-pad", Allow},
		{"sort -o out in", Allow},
		{"git push -f origin", Deny},
		{"git push origin +main", Deny},
		{"git push $(whoami)", Ask},
		{"$X push", Ask},
		{"npm install > /etc/x", Ask},
		{"npm test", Ask},
	} {
		if v := p.Check(tt.cmd, "/w", "/w"); v.Decision != tt.want {
			t.Errorf("Check(%q) = %v (%s), want %v", tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}

// TestUnmatchedAllow: a policy whose unmatched commands are allowed (a
// deny list) keeps every other decision: deny and ask rules, and the ask
// about what cannot be known statically, which may hide a denied command.
func TestUnmatchedAllow(t *testing.T) {
	p := &Policy{Unmatched: Allow, ReadOnly: true, Home: "/home/u"}
	for _, r := range []struct {
		d       Decision
		pattern string
	}{{Deny, "rm -rf"}, {Deny, "git push --force"}, {Ask, "git push"}, {Ask, "npm publish"}} {
		rule, err := NewRule(r.d, r.pattern, "test")
		if err != nil {
			t.Fatal(err)
		}
		p.Rules = append(p.Rules, rule)
	}
	for _, tt := range []struct {
		cmd  string
		want Decision
	}{
		// No rule matches: allowed, whatever the built-in tables say.
		{"touch f", Allow},
		{"go build ./...", Allow},
		{"python3 -q", Allow},
		{"sed -i s/a/b/ f", Allow},
		{"rm x", Allow},
		{"rm -r x", Allow},
		{"sudo touch f", Allow},
		{"bash -c 'mkdir d && touch d/f'", Allow},
		{"echo x > out", Allow},
		// Deny rules, in every spelling and at any depth.
		{"rm -rf x", Deny},
		{"rm -fr x", Deny},
		{"rm --recursive --force x", Deny},
		{"touch f && rm -r -f x", Deny},
		{"timeout 5 rm -rf x", Deny},
		{"bash -c 'rm -rf x'", Deny},
		{"echo $(rm -rf x)", Deny},
		{"git push --force origin", Deny},
		{"git push -f", Deny},
		// Ask rules.
		{"git push origin main", Ask},
		{"git push -n", Ask},
		{"touch f; npm publish", Ask},
		// What cannot be known statically may be a denied command.
		{"$X -rf y", Ask},
		{"c=rm; $c -rf x", Ask},
		{"eval \"$s\"", Ask},
		{"bash -c \"$s\"", Ask},
		{"rm $OPT x", Ask},
		{"PATH=/tmp/x rm x", Ask},
		{"echo x > /etc/x", Ask},
		{"ｒｍ -rf x", Ask},
		{"ls 'unterminated", Ask},
	} {
		v := p.Check(tt.cmd, "/w", "/w")
		if v.Decision != tt.want {
			t.Errorf("%q: %v (%s), want %v", tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}
