package permission

import "testing"

// Attack tables: command strings for which Check currently says Allow
// but bash -c runs something that is not allowed, writes outside the
// workspace, or changes what later commands run. Every case below was
// verified with bash 5.2 (GNU coreutils 9.1, findutils 4.9, git) in a
// throwaway directory with a harmless stand-in (touch of a marker file)
// for the payload.
//
// Each case was a bypass when it was written and stays as a regression
// test: it states the decision it must get (at least Ask; Deny where a
// denied command provably runs).

type attackCase struct {
	name string
	cmd  string
	want Decision // the weakest acceptable decision
	runs string   // what bash actually does
	why  string   // root cause in the checker
}

// attackBypasses use testPolicy (check_test.go).
var attackBypasses = []attackCase{
	// Parser disagreements between mvdan.cc/sh and bash: arbitrary commands.
	// The checker cannot read these as bash will, so it asks (never allows).
	{"comment-backslash-newline", "ls #\\\nrm -rf ~", Ask,
		"bash: a comment ends at the newline; `rm -rf ~` runs",
		"mvdan lexer treats \\<newline> inside a comment as a line continuation (syntax/lexer.go comment loop, case escNewl): Check sees `ls rm -rf ~`"},
	{"backslash-CR-LF", "echo a\\\r\nrm -rf ~", Ask,
		"bash: \\<CR> is an escaped CR, the LF ends the line; `rm -rf ~` runs",
		"mvdan turns \\\\\\r\\n into a line continuation (lexer.go rune()): Check sees `echo atouch…`"},
	{"comment-backslash-CR-LF", "ls #x\\\r\nrm -rf ~", Ask,
		"as above, inside a comment", "mvdan lexer, as above"},

	// Bash variables that change what a name runs; not in dangerousVars.
	{"BASH_CMDS-hash", "BASH_CMDS[cat]=/bin/sh; cat -c 'rm -rf ~'", Ask,
		"assigning BASH_CMDS[cat] puts /bin/sh in the hash table: `cat -c …` runs sh -c",
		"dangerousVars lacks BASH_CMDS"},
	{"BASH_ALIASES-posix", "POSIXLY_CORRECT=1\nBASH_ALIASES[ls]='rm -rf ~;'\nls", Ask,
		"POSIXLY_CORRECT turns on posix mode, which expands aliases in bash -c; ls is the alias",
		"dangerousVars lacks BASH_ALIASES and POSIXLY_CORRECT (alias() only sees the alias builtin)"},

	// Arithmetic and prompt expansion evaluate strings as code.
	{"test-clause-arith", "[[ 'a[$(rm -rf ~)]' -eq 0 ]]", Ask,
		"[[ -eq ]] evaluates the operand arithmetically; the subscript's $(…) runs",
		"script: a TestClause is never checked and the quoted string is text to the parser"},
	{"arith-exp-var", "x='a[$(rm -rf ~)]'; echo $((x))", Ask,
		"$((x)) evaluates x's value as an expression; the subscript's $(…) runs",
		"variable values reaching arithmetic are not followed"},
	{"arith-cmd-var", "x='a[$(rm -rf ~)]'; (( x ))", Ask, "as above", "ArithmCmd on a variable"},
	{"array-index-var", "x='a[$(rm -rf ~)]'; echo ${a[x]}", Ask, "an indexed-array subscript is arithmetic", "as above"},
	{"old-arith", "x='a[$(rm -rf ~)]'; echo $[x]", Ask, "$[…] is arithmetic", "as above"},
	{"declare-i", "declare -i x='a[$(rm -rf ~)]'", Ask,
		"declare -i evaluates the value arithmetically",
		"script: DeclClause only runs assigns(); declare/export/local/readonly/typeset are never rule-checked"},
	{"declare-quoted-subscript", "declare 'a[$(rm -rf ~)]=1'", Ask,
		"declare expands the subscript of a quoted a[…]=v argument", "DeclClause, as above"},
	{"let", "let 'x=a[$(rm -rf ~)]'", Ask,
		"let evaluates its string arithmetically", "script: a LetClause is never checked"},
	{"prompt-expansion", "x='$(rm -rf ~)'; echo ${x@P}", Ask,
		"${x@P} expands x like PS1, running its $(…)", "ParamExp operators @P not treated as dynamic code"},
	{"indirect-expansion", "x='a[$(rm -rf ~)]'; echo ${!x}", Ask,
		"${!x} expands the name a[$(…)], evaluating the subscript", "ParamExp indirection not treated as code"},

	// Assignments to dangerous variables the checker does not see.
	{"export-quoted-PATH", `export "PATH=/tmp/evil"; ls`, Ask,
		"export sets PATH; ls runs /tmp/evil/ls",
		"assigns: a quoted declare argument parses with Name == nil and is skipped"},
	{"export-quoted-BASH_ENV", "echo 'rm -rf ~' > evil.sh; export \"BASH_ENV=/w/evil.sh\"; bash -c ls", Ask,
		"every bash started later sources /w/evil.sh first", "as above"},
	{"nameref-PATH", "declare -n r=PATH; r=/tmp/evil; ls", Ask,
		"r is a nameref: r=… sets PATH", "namerefs (declare -n / local -n) not followed"},
	{"for-PATH", "for PATH in /tmp/evil; do ls; done", Ask,
		"the loop variable is PATH", "ForClause / select variable names not checked against dangerousVars"},
	{"git-config-via-HOME", "HOME=/w/h git status", Ask,
		"git reads $HOME/.gitconfig, written in the workspace, whose core.fsmonitor runs a command (also works where the sandbox keeps .git/config read-only)",
		"dangerousVars lacks HOME, XDG_CONFIG_HOME, GIT_DIR, GIT_COMMON_DIR"},
	{"git-config-via-XDG", "XDG_CONFIG_HOME=/w/cfg git status", Ask, "as above via $XDG_CONFIG_HOME/git/config", "as above"},
	{"git-config-via-GIT_DIR", "GIT_DIR=/w/fake.git git status", Ask, "as above via the fake repository's config", "as above"},

	// Wrapper option tables that disagree with the real programs.
	{"xargs-e", "xargs -e rm ls", Deny,
		"GNU xargs -e takes its value only attached (-e[EOF]): xargs runs `rm ls <input>`",
		"wrappers.go wrappers[\"xargs\"].valued lists -e, -i, -l, --replace, --eof, --max-lines, whose values are optional and attached only"},
	{"xargs-l", "xargs -l rm ls", Deny, "as above (-l[N])", "as above"},
	{"xargs-i", "xargs -i rm ls", Deny, "as above (-i[R])", "as above"},
	{"xargs-replace", "xargs --replace rm ls", Deny, "as above (--replace[=R])", "as above"},
	{"env-combined-S", "env -vS'rm -rf ~' ls", Ask,
		"-S inside a group of short options still splits the string: env runs `rm -rf ~ ls`",
		"wrappers.go wrapped: only a leading -S is recognized, not -iS…, -vS…, -0S…"},
	{"bash-rcfile", "bash --rcfile /w/evil.sh -ic ls", Ask,
		"an interactive bash sources the rcfile first", "wrappers.go shellC skips --rcfile/--init-file and their file"},
	{"bash-init-file", "bash --init-file /w/evil.sh -ic ls", Ask, "as above", "as above"},

	// Writes outside the workspace.
	{"dup-out-filename", "echo hi >& /home/u/.bashrc", Ask,
		">&WORD with a non-number WORD is &>WORD: it writes the file",
		"writeOps lacks syntax.DplOut"},
	{"dev-fd-dotdot", "echo hi > /dev/fd/../../../home/u/.bashrc", Ask,
		"/dev/fd/.. is /proc/self: the path reaches /home/u/.bashrc",
		"redirect: the /dev/fd/ prefix is trusted before filepath.Clean"},
	{"time-output", "\\time -f 'rm -rf ~' -o /home/u/.bashrc true", Ask,
		"GNU time writes the -f text into the -o file: a line of ~/.bashrc",
		"wrappers.go: time (and flock FILE, nohup's nohup.out) write files; wrappers pass through"},
	{"git-trace-file", "GIT_TRACE=/home/u/.bashrc git status", Ask,
		"git appends its trace to the file", "dangerousVars lacks GIT_TRACE* (GIT_TRACE, GIT_TRACE2*, GIT_TRACE_*)"},

	// Allow rules matched by base name.
	{"path-basename", "/tmp/evil/ls", Ask,
		"runs whatever executable /tmp/evil/ls is", "rules.go match: an allow rule's first word matches the base name of any path"},
	{"workspace-basename", "./ls", Ask,
		"runs a workspace file named ls (e.g. one built with the allowed go build -o ls / go test -c -o ls)", "as above"},

	// Deny weakened to Ask (minor).
	// Braces with quoted parts are not expanded statically: ask is enough.
	{"brace-quoted-deny", "{rm,'-rf',x}", Ask,
		"brace expansion gives `rm -rf x`",
		"words.go unquotedLit checks braces per literal part; a quoted part hides the comma"},
}

// attackDefaultsBypasses use the built-in read-only allows of
// cmd/dsh-bash/permissions.go (copied in attackDefaultsPolicy).
var attackDefaultsBypasses = []attackCase{
	{"printf-v-PATH", "printf -v PATH /tmp/evil; ls", Ask,
		"printf -v assigns PATH", "printf -v NAME is an assignment the checker does not see (also read, mapfile, getopts)"},
	{"printf-v-subscript", "printf -v 'a[$(rm -rf ~)]' x", Ask,
		"printf -v evaluates the subscript: $(…) runs", "as above"},
	{"sudo-passthrough", "sudo go test ./...", Ask,
		"runs test code as root", "wrappers.go: sudo/doas pass through to the inner command's rules; without a rule naming sudo they are transparent"},
	{"sudo-read", "sudo cat /etc/shadow", Ask, "reads root-only files", "as above"},
}

var attackDefaults = []string{
	"ls", "pwd", "cat", "head", "tail", "wc", "grep", "rg", "echo", "printf", "true", "false",
	"which", "type", "file", "stat", "du", "df", "sort", "uniq", "cut", "diff", "tree", "date",
	"whoami", "id", "uname", "basename", "dirname", "realpath", "readlink", "test",
	"git status", "git diff", "git log", "git show", "git branch", "git rev-parse", "git remote -v",
	"go version", "go env", "go list", "go vet", "go build", "go test",
}

func attackDefaultsPolicy(t testing.TB) *Policy {
	p := &Policy{Unmatched: Ask, Home: "/home/u"}
	for _, s := range attackDefaults {
		r, err := NewRule(Allow, s, "default")
		if err != nil {
			t.Fatal(err)
		}
		p.Rules = append(p.Rules, r)
	}
	return p
}

func runAttack(t *testing.T, p *Policy, cases []attackCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			v := p.Check(tt.cmd, "/w", "/w")
			t.Logf("%v: %s", v.Decision, v.Reason)
			if v.Decision < tt.want {
				t.Errorf("BYPASS %q: %v (%s), want at least %v\n  bash: %s\n  cause: %s",
					tt.cmd, v.Decision, v.Reason, tt.want, tt.runs, tt.why)
			}
		})
	}
}

// TestAttack: the bypasses against testPolicy. Fails until fixed.
func TestAttack(t *testing.T) { runAttack(t, testPolicy(t), attackBypasses) }

// TestAttackDefaults: the bypasses against the built-in allows. Fails
// until fixed.
func TestAttackDefaults(t *testing.T) { runAttack(t, attackDefaultsPolicy(t), attackDefaultsBypasses) }

// Inherent to prefix rules (not failures: an allowed prefix whose program
// can run or write anything). Listed for the record:
//
//	git status          with core.fsmonitor in .git/config (writable by `echo >> .git/config`)
//	git diff/log/show   --output=/any/file; --ext-diff / textconv from config
//	go test             runs test code; -exec, -toolexec, -o /abs, -coverprofile=/abs
//	go build/vet/env    -toolexec, -vettool, -o /abs, go env -w GOFLAGS=-toolexec=…
//	npm run *           any package.json script; --script-shell
//	sort / uniq / tree  sort --compress-program=PROG, sort -o /abs, uniq IN /abs, tree -o /abs
//	rg                  --pre PROG runs PROG on every file searched
//	git branch          -D / -f / -m mutate; not read-only
