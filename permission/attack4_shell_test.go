package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/internal/execbypass"
	"mvdan.cc/sh/v3/syntax"
)

// Fourth attack round: the shell classes of issue 34 §2, where bash builds
// another argv, environment or directory than the text shows. Every case
// was run with bash 5.2.15, GNU coreutils 9.1, findutils 4.9, util-linux
// 2.38 and procps-ng 4.0.2 in a throwaway directory, with a stand-in zap
// that leaves a marker; those where a denied program runs are also in
// testdata/execbypass/shell.txtar, for the exec-time check.

// zapPolicy denies the stand-in zap (and the rules given) and allows the
// rest: the rules as a deny list, with the built-in tables.
func zapPolicy(t testing.TB, deny ...string) *Policy {
	p := &Policy{Unmatched: Allow, ReadOnly: true, Home: "/home/u"}
	for _, pat := range append([]string{"zap"}, deny...) {
		r, err := NewRule(Deny, pat, "test")
		if err != nil {
			t.Fatal(err)
		}
		p.Rules = append(p.Rules, r)
	}
	return p
}

// zapRfPolicy denies zap -rf only: zap itself is allowed.
func zapRfPolicy(t testing.TB) *Policy {
	p := zapPolicy(t, "zap -rf")
	p.Rules = p.Rules[1:]
	return p
}

// shellCase is a command and the weakest decision it must get.
type shellCase struct {
	cmd  string
	want Decision
}

// checkAll checks each case under p, in workdir and workspace /w.
func checkAll(t *testing.T, p *Policy, cases []shellCase) {
	t.Helper()
	for _, tt := range cases {
		v := p.Check(tt.cmd, "/w", "/w")
		if v.Decision < tt.want {
			t.Errorf("BYPASS Check(%q) = %v (%s), want at least %v", tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}

// checkExactly checks that each case gets exactly its decision under p.
func checkExactly(t *testing.T, p *Policy, cases []shellCase) {
	t.Helper()
	for _, tt := range cases {
		if v := p.Check(tt.cmd, "/w", "/w"); v.Decision != tt.want {
			t.Errorf("Check(%q) = %v (%s), want %v", tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}

// TestBraceQuoted: bash expands braces across a word's quoted parts; a
// word with such braces is not its text.
func TestBraceQuoted(t *testing.T) {
	checkAll(t, readOnlyPolicy(), []shellCase{
		{`rg {--pre=zap,"x"} .`, Ask},
		{`rg {"--pre=zap",x} .`, Ask},
		{`rg {'--pre=zap',x} .`, Ask},
		{`rg {--pre=za,"x"}p .`, Ask},
		{`rg {{--pre=zap,x},"y"} .`, Ask},
		{`rg {--pre,"-x"}=zap .`, Ask},
		{`sed -{"i",n} s/a/b/ f`, Ask},
		{`sed "-"{i..i} s/a/b/ f`, Ask},
		{`sed -{i..i}"" s/a/b/ f`, Ask},
		{`echo x > {"/home/u/x",}`, Ask},
		{`echo x > {'/home/u/x',}`, Ask},
		{`echo x >> /home/{"u/x",}`, Ask},
		{`cat < {"/dev/tcp/h/80",}`, Ask},
		{`export {"PATH=/tmp/evil",}; ls`, Ask},
		{`declare {"BASH_ENV=x",}; bash -c ls`, Ask},
	})
	checkAll(t, zapPolicy(t), []shellCase{
		{`{zap,"x"}`, Ask}, {`{'zap',x}`, Ask}, {`z{a,"b"}p`, Ask}, {`{z"ap",}`, Ask},
		{`{{zap,x},"y"}`, Ask}, {`{zap,{"x",y}}`, Ask}, {`\${zap,x}`, Ask}, {`'$'{zap,x}`, Ask},
	})
	checkAll(t, zapRfPolicy(t), []shellCase{
		{`zap {"-rf",DIR}`, Ask}, {`zap -{r,"f"} DIR`, Ask}, {`zap -{r..r}"f" DIR`, Ask},
		{`zap "-r"{f,} DIR`, Ask}, {`zap {-r,"-f"} DIR`, Ask},
	})
}

// TestGlobQuoted: a bracket expression may be split by quotes, and match
// a file named like an option.
func TestGlobQuoted(t *testing.T) {
	checkAll(t, readOnlyPolicy(), []shellCase{
		{`rg ["-"]-pre=zap x .`, Ask},
		{`rg ['-']-pre=zap x .`, Ask},
		{`rg -["-"]pre=zap x .`, Ask},
		{`rg ["-"]"-pre=zap" x .`, Ask},
		{`echo x > /home/u/["x"]`, Ask},
	})
	checkAll(t, zapPolicy(t), []shellCase{{`["z"]ap`, Ask}, {`./['z']ap`, Ask}, {`z"a"[p]`, Ask}})
	checkAll(t, zapRfPolicy(t), []shellCase{{`zap ["-"]rf x`, Ask}, {`zap ['-']'rf' x`, Ask}, {`zap -["r"]f x`, Ask}})
}

// TestBraceAndGlobText: words whose braces or brackets are quoted, or
// make no expansion, are read as their text (bash leaves them as they
// are: a quoted { or [ opens nothing, and {x} has no comma). The check
// errs the other way where it is simpler: a quoted comma ({a\,b}) or
// ] (["-]") still counts.
func TestBraceAndGlobText(t *testing.T) {
	checkExactly(t, readOnlyPolicy(), []shellCase{
		{"git stash show -p stash@{0}", Allow},
		{"git log -g HEAD@{2.days}", Allow},
		{`rg '{a,b}' src`, Allow},
		{`rg "{a,b}" src`, Allow},
		{`rg "["-]x .`, Allow},
		{`rg \{--pre=zap,"x"} .`, Allow}, // \{ opens nothing
		{`rg a\*b .`, Allow},
		{`find . -name '*.go' -newer {}`, Allow},
		{`echo {} x`, Allow},
	})
	checkExactly(t, zapPolicy(t), []shellCase{{`"{zap,x}"`, Allow}, {`{zap,x\}`, Allow}})
}

// TestWrapperClusters: a wrapper's short options cluster, and one of them
// may take a value (the rest of the cluster, or the next word): the
// command starts after it.
func TestWrapperClusters(t *testing.T) {
	checkAll(t, zapPolicy(t), []shellCase{
		{"echo a | xargs -tI cat zap", Deny}, {"echo a | xargs -rI x zap", Deny}, {"xargs -0a f zap", Deny},
		{"xargs -tIX zap", Deny}, {"xargs -td , zap", Deny}, {"xargs -iI zap ls", Deny},
		{"xargs --max-lines zap", Deny}, {"xargs -tl zap", Deny}, {"xargs -ex zap", Deny},
		{"exec -la ls zap", Deny}, {"exec -cla ls zap", Deny}, {"exec -al zap ls", Deny},
		{"flock -nw 1 lk zap", Deny}, {"flock -xE 3 lk zap", Deny}, {"flock -nw1 lk zap", Deny},
		{"command time -vo out zap", Deny}, {"command time -qf %e zap", Deny}, {`\time -ao out zap`, Deny},
		{"env -vu X zap", Deny}, {"env -iu X zap", Deny}, {"env -iC /w zap", Deny}, {"env - zap", Deny},
		{"env -i - zap", Deny}, {"env -a ls zap", Deny}, {"env --argv0 ls zap", Deny},
		{"timeout -vs KILL 5 zap", Deny}, {"timeout -vk 5 5 zap", Deny},
		{"sudo -Eu root zap", Deny},
		// Options the table does not know may take a value.
		{"env -Z ls zap", Ask}, {"xargs -Z ls zap", Ask}, {"timeout -Z 5 ls zap", Ask}, {"env --frob ls zap", Ask},
	})
	checkAll(t, readOnlyPolicy(), []shellCase{
		{`\time -vo /home/u/.bashrc true`, Ask}, {`\time -ao/home/u/.bashrc true`, Ask},
	})
	checkExactly(t, zapPolicy(t), []shellCase{
		{"xargs -0 -n1 ls", Allow}, {"echo a | xargs -I{} echo {}", Allow}, {"timeout -v 5 ls", Allow},
		{"env -i ls", Allow}, {"env --ignore-environment ls", Allow}, {"xargs --null ls", Allow},
	})
}

// TestWatch: watch runs its operands joined through sh -c, or with -x as
// they are; -d takes its value only attached.
func TestWatch(t *testing.T) {
	checkAll(t, zapPolicy(t), []shellCase{
		{"watch -d zap ls", Deny}, {"watch --differences zap ls", Deny}, {"watch --diff zap ls", Deny},
		{"watch -tn 1 zap", Deny}, {"watch -q 1 zap", Deny}, {"watch -dn1 zap", Deny},
		{`watch -x env "X='" sh -c zap "'"`, Deny}, {`watch --exec env "X='" sh -c zap "'"`, Deny},
		{`watch -tx env "X='" sh -c zap "'"`, Deny}, {"watch -dx 'zap;' x", Deny}, {"watch -n1x 'zap;'", Deny},
		{"watch 'ls; zap'", Deny}, {"watch -- zap", Deny},
		{"watch 'echo x &>/dev/null zap'", Ask}, // sh may be dash: & then >
		{"watch -Z zap", Ask}, {"watch $x", Ask}, {"watch -x $x", Ask},
	})
	checkExactly(t, zapPolicy(t), []shellCase{
		{"watch -n 1 ls", Allow}, {`watch -x ls "a;zap"`, Allow}, {"watch -d=permanent git status", Allow},
	})
}

// TestTrapDashAction: after --, an action that starts with - runs.
func TestTrapDashAction(t *testing.T) {
	checkAll(t, zapPolicy(t), []shellCase{
		{"trap -- '-x; zap' EXIT", Deny}, {`trap -- -x\;zap EXIT`, Deny}, {"trap -p -- zap EXIT", Deny},
		{"trap -- $x EXIT", Ask}, {"trap $x EXIT", Ask},
	})
	checkExactly(t, zapPolicy(t), []shellCase{{"trap -- - EXIT", Allow}, {"trap -p", Allow}, {"trap -l", Allow}})
}

// execBypassDeny are the cases of shell.txtar that the static check must
// deny, not only ask about: the denied command is in plain sight once the
// words are read as bash reads them.
var execBypassDeny = map[string]bool{
	"wrapper-cluster/xargs-tI": true, "wrapper-cluster/xargs-rI": true, "wrapper-cluster/xargs-0a": true,
	"wrapper-cluster/xargs-max-lines": true, "wrapper-cluster/exec-la": true, "wrapper-cluster/flock-nw": true,
	"wrapper-cluster/flock-xE": true, "wrapper-cluster/time-vo": true, "wrapper-cluster/time-qf": true,
	"wrapper-cluster/env-vu": true, "wrapper-cluster/timeout-vs": true, "wrapper-cluster/timeout-vk": true,
	"watch/differences": true, "watch/differences-long": true, "watch/cluster-tn": true, "watch/equexit": true,
	"watch/exec-rejoined": true, "trap/dashdash-dash-action": true, "trap/dashdash-escaped": true,
	"shell-options/eo-pipefail": true, "shell-options/co": true, "shell-options/cO": true,
}

// TestExecBypassTable: every case of shell.txtar, under a policy of its
// deny rules that allows the rest, is not allowed: asked about, or
// denied where the denied command is in plain sight.
func TestExecBypassTable(t *testing.T) {
	cases := checkExecBypasses(t, "shell.txtar", execBypassDeny, func(deny []string) *Policy {
		p := &Policy{Unmatched: Allow, ReadOnly: true, Home: "/home/u"}
		for _, d := range deny {
			r, err := NewRule(Deny, d, "shell.txtar")
			if err != nil {
				t.Fatal(err)
			}
			p.Rules = append(p.Rules, r)
		}
		return p
	})
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.Name] = true
	}
	for name := range execBypassDeny {
		if !seen[name] {
			t.Errorf("%s is not in shell.txtar", name)
		}
	}
}

// checkExecBypasses checks that every case of testdata/execbypass/FILE,
// under the policy policyOf makes of its deny rules, is not allowed:
// asked about, or denied where deny names it. It returns the cases.
func checkExecBypasses(t *testing.T, file string, deny map[string]bool, policyOf func([]string) *Policy) []execbypass.Case {
	t.Helper()
	cases, err := execbypass.Read(filepath.Join("testdata", "execbypass", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		want := Ask
		if deny[c.Name] {
			want = Deny
		}
		if v := policyOf(c.Deny).Check(c.Run, "/w", "/w"); v.Decision < want {
			t.Errorf("%s: Check(%q) = %v (%s), want at least %v", c.Name, c.Run, v.Decision, v.Reason, want)
		}
	}
	return cases
}

// TestKeywordBySpelling: set -k and set -o keyword are found after quote
// removal, behind builtin and command, in clusters and in a shell's
// options.
func TestKeywordBySpelling(t *testing.T) {
	const after = "; bash -c ls BASH_ENV=./x"
	var cases []shellCase
	for _, set := range []string{`set -"k"`, `set '-k'`, `set -\k`, `set -o key''word`, `'se't -k`, `s\et -k`,
		`set -eo keyword`, `set -eok keyword`, `set -o "keyword"`, `builtin set -k`, `command set -k`,
		`builtin -- set -k`, `shopt -os key"word"`, `shopt -s -o 'keyword'`, `set -$o`, `set -o $o`, `shopt -os $o`} {
		cases = append(cases, shellCase{set + after, Ask})
	}
	cases = append(cases, shellCase{`bash -o keyword -c 'bash -c ls BASH_ENV=./x'`, Ask},
		shellCase{`bash -eo keyword -c 'bash -c ls BASH_ENV=./x'`, Ask},
		shellCase{`bash -k -c 'bash -c ls BASH_ENV=./x'`, Ask},
		shellCase{`sh -ek -c 'bash -c ls BASH_ENV=./x'`, Ask})
	checkAll(t, zapPolicy(t), cases)
	checkExactly(t, zapPolicy(t), []shellCase{
		{"set -e" + after, Allow}, {"set -o pipefail" + after, Allow}, {"shopt -s extglob" + after, Allow},
	})
}

// TestShellOptionWords: a shell's option words are read as bash reads
// them: each o or O of a cluster takes the next word, and the string of
// -c is the first operand after them all.
func TestShellOptionWords(t *testing.T) {
	checkAll(t, zapPolicy(t), []shellCase{
		{"bash -eo pipefail -c zap", Deny}, {"bash -co pipefail zap", Deny}, {"bash -ceo pipefail zap", Deny},
		{"bash -oo pipefail errexit -c zap", Deny}, {"bash -O extglob -c zap", Deny}, {"bash -cO extglob zap", Deny},
		{"bash +o posix -c zap", Deny}, {"bash +O extglob -c zap", Deny}, {"bash -c -e zap", Deny},
		{"bash -c -- zap", Deny}, {"bash --norc -c zap", Deny}, {"sh -euc zap", Deny},
		{"bash -c $x", Ask}, {"bash -o $x -c zap", Ask}, {"bash --rcfile f -c ls", Ask}, {"bash -c -o $x zap", Ask},
	})
	checkExactly(t, zapPolicy(t), []shellCase{{"bash -eo pipefail -c ls", Allow}, {"bash -co pipefail 'ls; pwd'", Allow}})
}

// TestHistoryExpansion: where history expansion may be on (set -H, set -o
// histexpand, bash -H, an interactive shell), a ! or ^ stands for words of
// other lines.
func TestHistoryExpansion(t *testing.T) {
	var cases []shellCase
	for _, on := range []string{"set -H", "set -o history -H", `set -"H"`, "set -o histexpand", "set -o hist''expand",
		"builtin set -H", "shopt -os histexpand", "set -$o", "eval 'set -H'"} {
		for _, use := range []string{"!e:1", `"!!:1"`, "^echo^", "echo !$"} {
			cases = append(cases, shellCase{on + "\necho zap\n" + use, Ask})
		}
	}
	cases = append(cases, shellCase{"bash -Hc 'set -o history\necho zap\n!e:1'", Ask},
		shellCase{"bash -ic 'set -o history\necho zap\n!e:1'", Ask},
		shellCase{"bash -o histexpand -c 'set -o history\necho zap\n!e:1'", Ask},
		shellCase{"histchars='%^#'; echo x", Ask}, shellCase{"printf -v histchars %s '%^#'", Ask})
	checkAll(t, zapPolicy(t), cases)
	checkExactly(t, zapPolicy(t), []shellCase{
		{"echo zap\n!e:1", Allow}, // history expansion is off in bash -c: !e:1 is a name
		{"set -H; ls", Allow}, {"bash -ic 'ls | grep x'", Allow}, {"set +H; [ ! -f x ]", Allow},
	})
}

// TestInteractiveComments: an interactive shell may not read # as a
// comment: a string with a comment for bash -i is asked about.
func TestInteractiveComments(t *testing.T) {
	checkAll(t, zapPolicy(t), []shellCase{
		{"bash -ic 'shopt -u interactive_comments\nls #; zap'", Ask},
		{"bash +o interactive-comments -ic 'ls #; zap'", Ask},
		{"bash -i +O interactive_comments -c 'ls #; zap'", Ask},
		{"bash -i -c 'ls # ; zap'", Ask}, {"bash -xic 'ls #; zap'", Ask},
	})
	checkExactly(t, zapPolicy(t), []shellCase{
		{"bash -c 'ls #; zap'", Allow}, // not interactive: # starts a comment
		{"bash -ic 'ls'", Allow}, {"bash -ic 'echo \"#\"'", Allow},
	})
}

// TestHeredocEnds: bash joins a line ending in a backslash to the next
// before it compares it with an unquoted delimiter, and reads $'…' in a
// delimiter; where that may end a here-document elsewhere than the parser
// does, it is asked about.
func TestHeredocEnds(t *testing.T) {
	checkAll(t, zapPolicy(t), []shellCase{
		{"cat <<EOF\nx\nEO\\\nF\nzap\nEOF", Ask},
		{"cat <<EOF\nx\n\\\nEOF\nzap\nEOF", Ask},
		{"cat <<EOF\n\\\nEOF\nzap\nEOF", Ask},
		{"cat <<EOF\nE\\\nO\\\nF\nzap\nEOF", Ask},
		{"cat <<-EOF\nx\n\tEO\\\nF\nzap\nEOF", Ask},
		{"cat <<-EOF\nx\nEO\\\n\tF\nzap\nEOF", Ask},
		{"cat <<EOF; cat <<A\nx\nEOF\nEO\\\nF\nA\nzap\nEOF\nA", Ask},
		{"cat <<$'E\\x4fF'\nx\nEOF\nzap\nE\\x4fF", Ask},
		{"cat <<E$'\\x4f'F\nx\nEOF\nzap\nE$'\\x4f'F", Ask},
		{"cat <<$\"EOF\"\nx\nEOF\nzap\n$\"EOF\"", Ask},
		{"cat <<\"E\\\\F\"\nx\nE\\F\nzap\n\"E\\\\F\"", Ask},
	})
	checkExactly(t, zapPolicy(t), []shellCase{
		{"cat <<EOF\nx\nEOF\nls", Allow},
		{"cat <<'EOF'\nx\nEO\\\nF\nzap\nEOF", Allow}, // quoted: no joining
		{"cat <<EOF\nx \\\n  y\nEOF\nls", Allow},
		{"cat <<EOF\nx\\\\\nEOF\nls", Allow},
		{"cat <<\"EOF\"\nx\nEOF", Allow}, {"cat <<E\\OF\nx\nEOF", Allow}, {"cat <<'E'\"O\"F\nx\nEOF", Allow},
		{"cat <<EOF\nx\nEOF\nzap", Deny},
	})
}

// TestDquotedParamQuotes: within double quotes (and a here-document's
// text), bash reads single quotes in ${x:-'…'} as plain characters and
// runs the substitution they hold.
func TestDquotedParamQuotes(t *testing.T) {
	var cases []shellCase
	for _, op := range []string{"-", ":-", "+", ":+", "=", ":="} {
		cases = append(cases, shellCase{`x=1; echo "${x` + op + `'$(zap)'}"`, Ask},
			shellCase{"x=1; echo \"${x" + op + "'`zap`'}\"", Ask},
			shellCase{`echo "a${x` + op + `${y:-'$(zap)'}}"`, Ask},
			shellCase{"cat <<EOF\n${x" + op + "'$(zap)'}\nEOF", Ask})
	}
	checkAll(t, zapPolicy(t), cases)
	checkExactly(t, zapPolicy(t), []shellCase{
		{`echo ${x:-'$(zap)'}`, Allow}, // unquoted: the quotes quote
		{`echo "${x#'$(zap)'}"`, Allow}, {`echo "${x:-'a b'}"`, Allow},
		{"cat <<'EOF'\n${x:-'$(zap)'}\nEOF", Allow},
	})
}

// TestAssignByOption: printf -vNAME attached, read's clusters (-raNAME),
// names only known when they run, and {NAME}> redirections assign
// variables too.
func TestAssignByOption(t *testing.T) {
	checkAll(t, zapPolicy(t), []shellCase{
		{"printf -vPATH %s bin2; ls", Ask}, {"printf -v PATH -- %s bin2; ls", Ask}, {"printf -vBASH_ENV %s x", Ask},
		{`printf -v"PATH" %s bin2`, Ask}, {"o=-vPATH; printf $o %s bin2; ls", Ask}, {`printf "$o" %s bin2`, Ask},
		{`printf "-v$n" %s bin2`, Ask}, {"printf -v $n %s bin2", Ask}, {"printf -v 'a[$(zap)]' x", Ask},
		{"read -aPATH <<< bin2", Ask}, {"read -raPATH <<< bin2", Ask}, {"read -r $v <<< bin2", Ask},
		{"read -r -- \"$v\" <<< bin2", Ask}, {"mapfile -tn1 PATH <<< bin2", Ask}, {"readarray -tO0 PATH < f", Ask},
		{"getopts ab PATH", Ask}, {"read -a'a[$(zap)]' <<< x", Ask},
		{": {PATH}>/dev/null; ls", Ask}, {"exec {PATH}>/dev/null", Ask}, {": {BASH_ENV}<>/dev/null", Ask},
		{": {PATH}>&2", Ask}, {": {PATH}<<<x", Ask}, {"x='b[$(zap)]'; : {a[x]}>/dev/null", Ask},
		{": {a['$(zap)']}>/dev/null", Ask}, {": {a[\"$n\"]}>/dev/null", Ask},
		// A variable filled from outside holds no number: arithmetic over it is asked about.
		{"x=1; printf -vx %s 'a[$(zap)]'; echo $((x))", Ask}, {"x=1; read -rx <<< 'a[$(zap)]'; echo $((x))", Ask},
	})
	checkExactly(t, zapPolicy(t), []shellCase{
		{`printf "Hello $x"`, Allow}, {`printf %s "$x"`, Allow}, {`printf -- "$x"`, Allow}, {"printf -v out %s x", Allow},
		{"read -r line < f", Allow}, {`read -p "Name: " name`, Allow}, {": {fd}>/dev/null", Allow},
		{"exec {fd}>&-", Allow}, {": {x} >/dev/null", Allow},
	})
}

// TestDirectoryChangeOrder: a write relative to the workdir may run after
// a cd that comes later in the text (a function, a loop, a trap), however
// the cd is spelled and wherever it is run from.
func TestDirectoryChangeOrder(t *testing.T) {
	var cases []shellCase
	for _, cd := range []string{"builtin cd ~", "command cd ~", "command -p cd ~", "builtin -- cd ~", `'c'd ~`,
		"eval cd ~", "eval 'cd ~'", "eval 'builtin cd ~'", "pushd ~", "popd", "bash -c 'eval cd'; eval cd ~"} {
		cases = append(cases,
			shellCase{"f() { echo x > .bashrc; }; " + cd + "; f", Ask},
			shellCase{"for i in 1 2; do echo x > .bashrc; " + cd + "; done", Ask},
			shellCase{"while :; do echo x >> .bashrc; " + cd + "; done", Ask})
	}
	cases = append(cases,
		shellCase{"trap 'cd ~' DEBUG; echo x > .bashrc", Ask},
		shellCase{"f() { echo x > .bashrc; }; trap 'cd ~' DEBUG; f", Ask},
		shellCase{"trap 'echo x > .bashrc' EXIT; builtin cd ~", Ask},
		shellCase{"shopt -s expand_aliases; alias c='cd ~'\nf() { echo x > .bashrc; }; c; f", Ask},
		shellCase{"env -iC /home/u bash -c 'echo x > .bashrc'", Ask},
		shellCase{"env --ch=/home/u bash -c 'echo x > .bashrc'", Ask},
		shellCase{"for i in 1 2; do bash -c 'echo x > .bashrc'; eval cd ~; done", Ask},
		shellCase{"f() { \\time -o .bashrc true; }; builtin cd ~; f", Ask})
	checkAll(t, readOnlyPolicy(), cases)
	checkAll(t, zapPolicy(t), []shellCase{ // find itself is allowed here
		{"find / -name passwd -execdir sh -c 'echo x > pwn' ';'", Ask},
		{"find / -name passwd -okdir bash -c 'echo x > pwn' ';'", Ask},
	})
	// A cd in another shell moves that shell only: its own writes after it
	// are still asked about.
	checkAll(t, readOnlyPolicy(), []shellCase{
		{"bash -c 'cd ~; echo x > .bashrc'", Ask}, {"echo x > a; bash -c 'cd ~; echo x > .bashrc'", Ask},
		{"watch 'cd ~; echo x > .bashrc'", Ask}, {"flock l -c 'cd ~; echo x > .bashrc'", Ask},
	})
	checkExactly(t, readOnlyPolicy(), []shellCase{
		{"echo x > a; bash -c 'cd /tmp && ls'", Allow}, {"bash -c 'cd /tmp && ls'; echo x > a", Allow},
		{"echo x > out.txt; cat out.txt", Allow},
	})
}

// TestWriteThroughLinkDotDot: the kernel follows a link before the ..
// after it: ext/../pwn, with ext a link to a directory outside, is next
// to that directory, not in the workspace; the same from a workdir that
// is such a link.
func TestWriteThroughLinkDotDot(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(outside, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(outside, "dir"), filepath.Join(ws, "ext"))
	os.Symlink("ext/..", filepath.Join(ws, "up"))
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	p := readOnlyPolicy()
	for _, tt := range []struct {
		cmd, workdir string
		want         Decision
	}{
		{"echo x > ext/../pwn", ws, Ask},
		{"echo x > ./ext/../pwn", ws, Ask},
		{"echo x > ext/./../pwn", ws, Ask},
		{"echo x > ext/../dir/../pwn", ws, Ask},
		{"echo x > " + ws + "/ext/../pwn", ws, Ask},
		{"echo x > up/pwn", ws, Ask},
		{"echo x >> sub/../ext/../pwn", ws, Ask},
		{`\time -o ext/../pwn true`, ws, Ask},
		{"git -C ext/.. status", ws, Ask},
		// A workdir that is a link outside: its .. is outside too.
		{"echo x > ../pwn", filepath.Join(ws, "ext"), Ask},
		{"echo x > f", filepath.Join(ws, "ext"), Ask},
		{"echo x > f", outside, Ask},
		{"echo x > ../f", outside, Ask},
		// Within the workspace.
		{"echo x > sub/../f", ws, Allow},
		{"echo x > ../" + filepath.Base(ws) + "/f", ws, Allow},
		{"echo x > f", filepath.Join(ws, "sub"), Allow},
		{"echo x > ../f", filepath.Join(ws, "sub"), Allow},
		{"git -C sub status", ws, Allow},
	} {
		if v := p.Check(tt.cmd, tt.workdir, ws); v.Decision != tt.want {
			t.Errorf("Check(%q) in %s = %v (%s), want %v", tt.cmd, tt.workdir, v.Decision, v.Reason, tt.want)
		}
	}
}

// TestCompatLevel: at a bash compatibility level up to 4.2 (shopt -s
// compat42, BASH_COMPAT, bash -O compat41, or inherited), single quotes
// in "${x/a/'…'}" quote nothing either; setting a level is asked about.
func TestCompatLevel(t *testing.T) {
	checkAll(t, zapPolicy(t), []shellCase{
		{`x=abc; shopt -s compat41; echo "${x/a/'$(zap)'}"`, Ask},
		{`x=abc; BASH_COMPAT=42; echo "${x//a/'$(zap)'}"`, Ask},
		{`echo "${x/a/'$(zap)'}"`, Ask}, {"echo \"${x/#'`zap`'/b}\"", Ask}, {`echo "${x/%a/'$(zap)'}"`, Ask},
		{"cat <<EOF\n${x/a/'$(zap)'}\nEOF", Ask},
		{"shopt -s compat42", Ask}, {"shopt -s compat31 nullglob", Ask}, {"builtin shopt -s compat44", Ask},
		{"shopt -s $o", Ask}, {"BASH_COMPAT=41 bash -c ls", Ask}, {"bash -O compat41 -c ls", Ask},
		{"bash -xO compat40 -c ls", Ask},
	})
	checkExactly(t, zapPolicy(t), []shellCase{
		{`echo "${x/a/b}"`, Allow}, {`echo ${x/a/'$(zap)'}`, Allow}, {"shopt -s nullglob; ls", Allow},
		{"bash -O extglob -c ls", Allow},
	})
}

// TestTildeSplit: the parser splits ~ from what follows it unless that is
// a slash (~"x", ~[); bash's tilde-prefix then holds those characters,
// and is ~user or, quoted, literal: never home. Found comparing the words
// the check reads with bash's over 8000 random words of braces, brackets,
// globs, quotes and tildes, in a directory of files named like options.
func TestTildeSplit(t *testing.T) {
	for _, tt := range []struct {
		word, want string
		static     bool
	}{
		{`~"/x"`, "", false}, {"~[", "", false}, {"~'a'", "", false}, {`~"]"`, "", false},
		{"~/a", "/home/u/a", true}, {"~", "/home/u", true}, {`~/"a b"`, "/home/u/a b", true},
		{`a"~"`, "a~", true}, {`\~/a`, "~/a", true},
	} {
		f, err := syntax.NewParser().Parse(strings.NewReader("echo "+tt.word), "")
		if err != nil {
			t.Fatal(err)
		}
		got, static := staticWord(f.Stmts[0].Cmd.(*syntax.CallExpr).Args[1], "/home/u")
		if static != tt.static || static && got != tt.want {
			t.Errorf("staticWord(%s) = %q, %v; want %q, %v", tt.word, got, static, tt.want, tt.static)
		}
	}
	checkAll(t, readOnlyPolicy(), []shellCase{{`echo x > ~"/.bashrc"`, Ask}})
}
