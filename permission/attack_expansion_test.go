package permission

import "testing"

// Second attack round (the first is attack_test.go, whose types and
// runAttack this reuses). Every bypass below was verified with bash
// 5.2.15, dash 0.5.12 (/bin/sh), GNU coreutils 9.1 (env, time 1.9),
// findutils 4.9 (xargs), util-linux 2.38 (flock) and git 2.39 in a
// throwaway directory, with `touch MARKER` in place of the payload and
// HOME pointing into that directory. The payload here is `rm victim`.
//
// Each case was a bypass when it was written and stays as a regression
// test: it states the weakest decision it must get (Ask; Deny where the
// checker can see a denied command run).

// attack2Bypasses use testPolicy (check_test.go).
var attack2Bypasses = []attackCase{
	// ${VAR:=value} and ${VAR=value} assign, and nothing checks the name.
	{"param-default-BASH_CMDS", `echo ${BASH_CMDS["ls"]:=/bin/sh}; ls -c 'rm victim'`, Ask,
		"the expansion puts /bin/sh in the hash table under ls (ls is not hashed yet): `ls -c …` runs sh -c 'rm victim'",
		"paramExp: the assigning operators (syntax.AssignUnset, AssignUnsetOrNull) never reach setsVar/dangerousVar"},
	{"param-default-BASH_ENV", "echo 'rm victim' > evil.sh; echo ${BASH_ENV:=evil.sh}; export BASH_ENV; bash -c ls", Ask,
		"BASH_ENV is unset, so := sets it; the naked export is allowed; the inner bash sources evil.sh", "as above"},
	{"param-default-posix-alias", "echo ${POSIXLY_CORRECT:=1} ${BASH_ALIASES[\"ls\"]:='rm victim;'}\nls", Ask,
		"POSIXLY_CORRECT turns on posix mode (aliases expand in bash -c) and BASH_ALIASES[ls] defines the alias: the ls on the next line runs rm",
		"as above"},
	{"param-default-indirect", "x=BASH_ENV; echo 'rm victim' > evil.sh; echo ${!x:=evil.sh}; export BASH_ENV; bash -c ls", Ask,
		"${!x:=…} assigns the variable x names", "as above; paramExp trusts ${!x} when x was set to a safe-looking value"},
	{"param-default-GIT_EXTERNAL_DIFF", "echo ${GIT_EXTERNAL_DIFF:='rm victim;:'}; export GIT_EXTERNAL_DIFF; git diff", Ask,
		"git diff runs $GIT_EXTERNAL_DIFF through the shell for each changed file", "as above"},

	// Arithmetic assigns too; the assigned name is never checked. The value
	// is a number, which is enough: a relative PATH or BASH_ENV file "0".
	{"arith-assign-BASH_ENV", "echo 'rm victim' > 0; ((BASH_ENV=0)); export BASH_ENV; bash -c ls", Ask,
		"BASH_ENV=0: every later bash sources the workspace file ./0",
		"arith.go scan notes arithmetic assignments (BinaryArithm assign ops, ++/--) as safe; nothing calls dangerousVar on their names"},
	{"let-PATH", "let PATH=0; ls", Ask, "PATH=0 (relative): ls runs ./0/ls, any executable the agent put there", "as above (LetClause)"},
	{"dollar-arith-PATH", "echo $((PATH=0)); ls", Ask, "as above", "as above (ArithmExp)"},
	{"subscript-arith-BASH_ENV", "echo 'rm victim' > 0; echo ${a[BASH_ENV=0]}; export BASH_ENV; bash -c true", Ask,
		"an indexed subscript is arithmetic: it sets BASH_ENV=0", "as above (ParamExp.Index)"},

	// git reads this when core.fsmonitor is unset and runs it as a hook.
	{"git-test-fsmonitor", "GIT_TEST_FSMONITOR='rm victim' git status", Ask,
		"git status runs $GIT_TEST_FSMONITOR through the shell (fsmonitor-settings.c)",
		"dangerousVars lacks GIT_TEST_FSMONITOR (ask on GIT_TEST_* and better on every GIT_* not known harmless)"},

	// Values evaluated as arithmetic: a subscript in the value runs $(…).
	{"integer-attr-later", "declare -i x; x='a[$(rm victim)]'", Ask,
		"assigning to an integer variable evaluates the value arithmetically",
		"declare checks only values in the same declare; later assignments to an -i variable are plain Assigns"},
	{"integer-attr-append", "typeset -i x; x+='a[$(rm victim)]'", Ask, "as above, +=", "as above"},
	{"integer-attr-array", "declare -ia x; x=('a[$(rm victim)]')", Ask, "as above, array elements", "as above"},
	{"slice-offset", "x='a[$(rm victim)]'; echo ${y:x}", Ask,
		"${y:offset} evaluates offset arithmetically: x's value runs",
		"arith.go arithRoots: ParamExp.Slice.Offset and .Length are not roots"},
	{"slice-length", "x='a[$(rm victim)]'; echo ${y:0:x}", Ask, "as above, length", "as above"},
	{"slice-positional", "x='a[$(rm victim)]'; echo ${@:x}", Ask, "as above, on $@", "as above"},
	{"array-literal-index", "x='a[$(rm victim)]'; b=([x]=1)", Ask,
		"[x]= in an indexed array literal is arithmetic", "arith.go arithRoots: ArrayElem.Index is not a root"},
	{"array-literal-append", "x='a[$(rm victim)]'; b+=([x]=1)", Ask, "as above", "as above"},
	{"array-literal-declare", "x='a[$(rm victim)]'; declare -a b=([x]=1)", Ask, "as above, in declare (and local -a)", "as above"},
	{"test-v-literal", "[[ -v 'a[$(rm victim)]' ]]", Ask,
		"-v NAME[SUB] expands and evaluates SUB (even when a is unset)",
		"walk.go/arith.go: the operand of [[ -v ]] (UnaryTest TsVarSet) is a name with a subscript and is never checked"},
	{"test-v-var-subscript", "x='b[$(rm victim)]'; [[ -v a[x] ]]", Ask, "the subscript x is evaluated: x's value runs", "as above"},
	{"test-v-expanded", "x='a[$(rm victim)]'; [[ -v $x ]]", Ask, "as above, name from a variable", "as above"},
	{"test-eq-inner-subscript", "a=0; x='b[$(rm victim)]'; [[ a[x] -eq 0 ]]", Ask,
		"[[ -eq ]] evaluates a[x]; the subscript evaluates x, whose value runs",
		"arith.go unsafeWord: for a literal word only the name before [ is checked, not the subscript"},
	{"arith-var-chain", "x='a[$(rm victim)]'; y=x; echo $((y))", Ask,
		"y's value `x` is evaluated as an expression in turn: x's value runs",
		"arith.go safeValue: any static value without $ or ` counts as safe, but a value that names a variable (or a[x]) is evaluated recursively; only numbers are safe"},
	{"arith-var-chain-subscript", "x='b[$(rm victim)]'; y='a[x]'; echo $((y))", Ask, "as above", "as above"},

	// Wrapper options: GNU getopt_long takes any unambiguous prefix of a
	// long option, and values attached with = or to a short option.
	{"env-unset-abbrev", "env --un ls rm victim", Deny,
		"--un is --unset: env unsets ls and runs `rm victim`",
		"wrappers.go takesValue compares long options exactly"},
	{"env-split-abbrev", "env --split='rm victim' ls", Ask,
		"--split= is --split-string=: env runs `rm victim ls`",
		"wrappers.go wrapped: only a word starting with --split-string is seen as -S"},
	{"env-s-abbrev", "env --s='rm victim' ls", Ask, "as above, --s=", "as above"},
	{"xargs-arg-file-abbrev", "xargs --arg ls rm", Deny,
		"--arg is --arg-file: xargs reads items from the file ls and runs rm on them",
		"wrappers.go takesValue compares long options exactly"},
	{"flock-wait", "flock --wait 1 true -c 'rm victim'", Ask,
		"--wait (alias of --timeout) takes 1; true is the lock file; flock runs sh -c 'rm victim'",
		"wrappers.go wrappers[\"flock\"].valued lacks --wait and prefixes; flock FILE -c CMD is never parsed as a shell string"},
	{"flock-timeout-abbrev", "flock --tim 1 true -c 'rm victim'", Ask, "as above, --tim", "as above"},
	{"time-output-eq", `\time --output=/home/u/.bashrc true`, Ask,
		"GNU time writes its report to ~/.bashrc", "wrappers.go wrapped: writes are checked only for a value in the next word, not --output=FILE, -oFILE or --out FILE"},
	{"time-o-attached", `\time -o/home/u/.bashrc true`, Ask, "as above", "as above"},
	{"time-output-abbrev", `\time --out=/home/u/.bashrc true`, Ask, "as above", "as above"},

	// The directory writes are relative to.
	{"env-chdir-bash-c", "env -C /home/u bash -c 'echo x > .bashrc'", Ask,
		"env -C runs bash in /home/u: the relative write is /home/u/.bashrc",
		"writes: changesDir is set only by cd/pushd/popd; env -C/--chdir (and sudo -D, find -execdir) move what they run"},
	{"env-chdir-eq", "env --chdir=/home/u bash -c 'echo x > .bashrc'", Ask, "as above", "as above"},
	{"env-chdir-attached", "env -C/home/u bash -c 'echo x > .bashrc'", Ask, "as above", "as above"},

	// The parser and bash disagree on a here-document inside $(…), <(…)
	// and `…`: bash ends it at a line `EOF)` (with a warning) and the
	// substitution with it; the next lines run as commands (before the
	// syntax error at the end). mvdan.cc/sh reads on until a line `EOF`.
	{"heredoc-comsub-quoted", "echo $(cat <<'EOF'\nEOF)\nrm victim\nEOF\n)", Ask,
		"bash runs `rm victim` at top level", "mvdan.cc/sh here-document lexing inside a command substitution (script trusts the parse)"},
	{"heredoc-comsub-unquoted", "echo $(cat <<EOF\nEOF)\nrm victim\nEOF\n)", Ask, "as above", "as above"},
	{"heredoc-comsub-dquoted", "echo \"$(cat <<'EOF'\nEOF)\"\nrm victim\nEOF\n)\"", Ask, "as above", "as above"},
	{"heredoc-comsub-param", "echo ${x:-$(cat <<'EOF'\nEOF)}\nrm victim\nEOF\n)}", Ask, "as above", "as above"},
	{"heredoc-procsubst", "cat <(cat <<'EOF'\nEOF)\nrm victim\nEOF\n)", Ask, "as above", "as above"},

	// sh is dash (Debian, Ubuntu), which is not bash.
	{"sh-dash-amp-redirect", "sh -c 'echo x &>/dev/null rm victim'", Ask,
		"dash reads `&>` as `&` then `>`: `echo x &` and `>/dev/null rm victim` (rm runs)",
		"wrappers.go shellC parses the string of sh, dash, ash, ksh, mksh and zsh -c as bash"},
	{"sh-dash-no-ansi-c", "sh -c \"echo \\$'\\\\'\nrm victim\necho '\"", Ask,
		"dash has no $'…': `$'\\'` ends at the second quote, `rm victim` runs on the next line (bash would read one long string)",
		"as above"},
}

// attack2Defaults is the built-in allow list of cmd/dsh-bash/permissions.go
// (attackDefaults lacks its "[" and "cd").
var attack2Defaults = append(append([]string{}, attackDefaults...), "[", "cd")

func attack2DefaultsPolicy(t testing.TB) *Policy {
	p := &Policy{Unmatched: Ask, Home: "/home/u"}
	for _, s := range attack2Defaults {
		r, err := NewRule(Allow, s, "default")
		if err != nil {
			t.Fatal(err)
		}
		p.Rules = append(p.Rules, r)
	}
	return p
}

// attack2DefaultsBypasses use the real built-in allows.
var attack2DefaultsBypasses = []attackCase{
	{"test-v-builtin", "test -v 'a[$(rm victim)]'", Ask,
		"test -v NAME[SUB] evaluates SUB; test is allowed by default", "test/[ -v operands are not checked (fills or a test-specific check)"},
	{"bracket-v-builtin", "[ -v 'a[$(rm victim)]' ]", Ask, "as above, [ is allowed by default", "as above"},
	{"loop-write-before-cd", "for d in 1 2; do echo x > .bashrc; cd ~; done", Ask,
		"the second pass writes ~/.bashrc",
		"changesDir is set in walk order; a write before a cd in a loop (or in a function called after a cd) runs after it"},
	{"dup-out-dash-name", "cd ~ && echo x >& 1-1", Ask,
		">&1-1 is a file name to bash (only N and N- are descriptors): it writes ~/1-1",
		"isFD accepts any mix of digits and dashes"},
}

// attack2Handled: candidates of this round that Check already answers
// well (regression cases; they pass).
var attack2Handled = []attackCase{
	{"quoted-heredoc-backslash", "cat <<'EOF'\nfoo\\\nEOF\nrm victim\nEOF", Deny, "a quoted here-document ends at EOF", ""},
	{"dparen-subshells", "((ls); (rm victim))", Ask, "bash falls back to subshells; mvdan does not parse it", ""},
	{"dollar-dparen-subshells", "echo $((ls); (rm victim))", Ask, "as above", ""},
	{"backquote-heredoc", "echo `cat <<'EOF'\nEOF`\nrm victim\nEOF\n`", Ask, "does not parse", ""},
	{"exec-a", "exec -a ls rm victim", Deny, "", ""},
	{"command-p", "command -p rm victim", Deny, "", ""},
	{"timeout-foreground", "timeout --foreground 5 rm victim", Deny, "", ""},
	{"nohup-dashdash", "nohup -- rm victim", Deny, "", ""},
	{"bash-c-dashdash", "bash -c -- 'rm victim'", Deny, "", ""},
	{"eval-joined", "eval ls '&&' rm victim", Deny, "", ""},
	{"function-shadows-echo", "echo() { rm victim; }; echo", Deny, "", ""},
	{"unset-subscript", "unset 'a[$(rm victim)]'", Ask, "", ""},
	{"read-a-subscript", "read -a 'a[$(rm victim)]'", Ask, "", ""},
	{"hash-p", "hash -p /bin/sh ls; ls -c 'rm victim'", Ask, "", ""},
	{"mapfile-callback", "mapfile -C 'rm victim' -c 1 a < f", Ask, "", ""},
	{"group-redirect", "{ ls; } > /home/u/x", Ask, "", ""},
	{"function-redirect", "f() { ls; } > /home/u/x", Ask, "", ""},
	{"named-fd-redirect", "ls {fd}>/home/u/x", Ask, "", ""},
	{"clobber-redirect", "echo x >| /home/u/x", Ask, "", ""},
	{"append-all-redirect", "echo x &>> /home/u/x", Ask, "", ""},
	{"readwrite-redirect", "echo x <> /home/u/x", Ask, "", ""},
	{"dev-stdout-dotdot", "echo x > /dev/stdout/../../home/u/x", Ask, "", ""},
	{"proc-self-root", "echo x > /proc/self/root/home/u/x", Ask, "", ""},
	{"git-alias-shell", "git -c alias.x='!rm victim' x", Ask, "", ""},
	{"git-exec-path", "git --exec-path=/tmp status", Ask, "", ""},
	{"heredoc-word-expansion", "cat <<$(rm victim)\nx\n$(rm victim)", Ask, "", ""},
	{"busybox-sh", "busybox sh -c 'rm victim'", Ask, "", ""},
	{"env-unset-full", "env --unset=ls rm victim", Deny, "", ""},
	{"xargs-arg-file-full", "xargs --arg-file ls rm", Deny, "", ""},
	{"printf-d-no-eval", "printf '%d' 'a[$(rm victim)]'", Ask, "bash printf %d does not evaluate (invalid number); printf is not allowed in testPolicy", ""},
}

// TestAttack2: the bypasses against testPolicy. Fails until fixed.
func TestAttack2(t *testing.T) { runAttack(t, testPolicy(t), attack2Bypasses) }

// TestAttack2Defaults: the bypasses against the built-in allows. Fails
// until fixed.
func TestAttack2Defaults(t *testing.T) {
	runAttack(t, attack2DefaultsPolicy(t), attack2DefaultsBypasses)
}

// TestAttack2Handled: what this round tried that Check already stops.
func TestAttack2Handled(t *testing.T) { runAttack(t, testPolicy(t), attack2Handled) }

// Untested here: zsh, ksh and mksh are not installed. zsh -c strings
// parsed as bash are suspect the same way (glob qualifiers *(e:'cmd':),
// ${(e)x}).
