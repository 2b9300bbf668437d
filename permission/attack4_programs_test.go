package permission

import (
	"strings"
	"testing"
)

// Issue 34, §2, the classes of particular programs: each was a bypass
// (a command the checker allowed that, run by bash 5.2 with git 2.39, Go
// 1.26, ripgrep, GNU sort, tar, npm and kubectl and a stand-in zap that
// leaves a marker, ran a denied program, wrote where git reads what it
// runs, or raised its priority). The cases where a denied program runs
// are also in testdata/execbypass/programs.txtar, for the exec-time
// check.

// policyOf builds a policy from "decision pattern" lines.
func policyOf(t testing.TB, unmatched Decision, readOnly bool, rules ...string) *Policy {
	t.Helper()
	p := &Policy{Unmatched: unmatched, ReadOnly: readOnly, Home: "/home/u"}
	for _, line := range rules {
		word, pattern, _ := strings.Cut(line, " ")
		d, err := ParseDecision(word)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRule(d, pattern, "test")
		if err != nil {
			t.Fatal(err)
		}
		p.Rules = append(p.Rules, r)
	}
	return p
}

// decisionCase is a command and the decision it must get exactly.
type decisionCase struct {
	cmd  string
	want Decision
}

// checkDecisions checks each case under p, in workspace /w.
func checkDecisions(t *testing.T, p *Policy, cases []decisionCase) {
	t.Helper()
	for _, tt := range cases {
		if v := p.Check(tt.cmd, "/w", "/w"); v.Decision != tt.want {
			t.Errorf("%q: %v (%s), want %v", tt.cmd, v.Decision, v.Reason, tt.want)
		}
	}
}

// denyListPolicy is the policy of the exec-bypass table: a deny list
// (Unmatched allows) with the built-in tables.
func denyListPolicy(t testing.TB, deny ...string) *Policy {
	var rules []string
	for _, d := range deny {
		rules = append(rules, "deny "+d)
	}
	return policyOf(t, Allow, true, rules...)
}

// TestGitOptionsHideNoSubcommand: git's options before its subcommand
// (any of them, in any spelling) do not hide it from deny and ask rules;
// a word among them only known when it runs, or one git may know that
// the checker does not, makes it an ask.
func TestGitOptionsHideNoSubcommand(t *testing.T) {
	p := denyListPolicy(t, "zap", "git push --force")
	p.Rules = append(p.Rules, policyOf(t, Ask, false, "ask git commit").Rules...)
	checkDecisions(t, p, []decisionCase{
		{"git -c a.b=c push --force origin", Deny},
		{"git --git-dir=.git push --force", Deny},
		{"git --git-dir .git push -f", Deny},
		{"git --work-tree=. push --force", Deny},
		{"git --work-tree . push origin +main", Deny},
		{"git -C /elsewhere push --force", Deny},
		{"git -C sub -c x.y=z --no-pager push --force", Deny},
		{"git --exec-path=/tmp push --force", Deny},
		{"git --namespace=n push --force", Deny},
		{"git --namespace n --bare push -f", Deny},
		{"git -p --literal-pathspecs --no-replace-objects push --force", Deny},
		{"git --super-prefix x/ --attr-source HEAD push --force", Deny},
		{"git --config-env=a.b=V push --force", Deny},
		{"git -c 'user.name=A B' push --force", Deny},
		{`git -c "$X" push --force`, Deny}, // one word: -c's value
		{"git -c alias.x='push --force' x origin", Deny},
		{"git -c $X push --force", Ask}, // may be several words
		{"git --frob push --force", Ask},
		{"git --git-dir=$D push --force", Ask}, // $D may be several words
		{`git --git-dir "$D" push --force`, Deny},
		{`git --git-dir="$D" push --force`, Ask}, // the placeholder keeps no static prefix
		{"git -c a.b=c commit -m x", Ask},
		{"git --no-pager commit -m x", Ask},
		{"git -c a.b=c push origin main", Ask}, // a.b may run a program
		{"git -c color.ui=never push origin main", Allow},
	})
}

// TestGitOptionsForAllowRules: an allow rule (and the built-in tables)
// covers git's options before the subcommand only when they change
// nothing it cares about; -c with a key that may run a program is
// never covered unless the rule names it.
func TestGitOptionsForAllowRules(t *testing.T) {
	p := policyOf(t, Ask, true, "allow git fetch", "deny zap")
	checkDecisions(t, p, []decisionCase{
		{"git --no-pager log -3", Allow},
		{"git -P diff", Allow},
		{"git -C sub status", Allow},
		{"git --git-dir=.git log --oneline", Allow},
		{"git --work-tree=. status", Allow},
		{"git --git-dir .git --work-tree . status -s", Allow},
		{"git -c color.ui=never diff", Allow},
		{"git -c core.quotepath=off status", Allow},
		{"git -c user.name=x fetch origin", Allow},
		{"git -C /tmp status", Ask},
		{"git --git-dir=/tmp/x/.git log", Ask},
		{"git -c core.pager=less log", Ask},
		{"git -c core.pager=zap log", Deny},
		{"git -c alias.x='!zap' x", Deny},
		{"git -c alias.x='!./x' x", Ask},
		{"git --exec-path=/tmp log", Ask},
		{"git -c core.fsmonitor=./x status", Ask},
		{"git -c include.path=/tmp/cfg status", Ask},
		{"git -c core.pager=./x fetch origin", Ask},
		{"git --config-env=core.pager=P log", Ask},
		{"git -p log", Ask},
		{"git --bare log", Ask},
	})
}

// TestGitHints: the prefix an ask offers names git's -c options (which
// an allow rule must name) but not the ones that change nothing.
func TestGitHints(t *testing.T) {
	p := &Policy{Unmatched: Ask, Home: "/home/u"}
	for _, tt := range []struct{ cmd, hint string }{
		{"git --no-pager commit -m x", "git commit -m"},
		{"git -c user.name=A commit -m x", "git -c user.name=A commit -m"},
		{"git -P -c core.pager=less log", "git -c core.pager=less log"},
		{"git fetch origin --upload-pack=./x", "git fetch origin --upload-pack=./x"},
		{"git fetch --upload-pack ./x origin", "git fetch --upload-pack ./x"},
	} {
		v := p.Check(tt.cmd, "/w", "/w")
		if v.Decision != Ask || strings.Join(v.Prefixes, "|") != tt.hint {
			t.Errorf("%q: %v (%s), prefixes %q, want ask, %q", tt.cmd, v.Decision, v.Reason, v.Prefixes, tt.hint)
			continue
		}
		r, err := NewRule(Allow, tt.hint, "hint")
		if err != nil {
			t.Fatal(err)
		}
		p2 := &Policy{Unmatched: Ask, Home: "/home/u", Rules: []Rule{r}}
		if v := p2.Check(tt.cmd, "/w", "/w"); v.Decision != Allow {
			t.Errorf("%q allowed by its hint %q: %v (%s)", tt.cmd, tt.hint, v.Decision, v.Reason)
		}
	}
}

// TestCanonicalGit: the form deny rules read, for the exec-time check
// too (every word known).
func TestCanonicalGit(t *testing.T) {
	for _, tt := range []struct {
		argv, want string
		ok         bool
	}{
		{"git -c a=b push --force", "git push --force", true},
		{"/usr/bin/git --git-dir .git --work-tree=. -C x -P push", "/usr/bin/git push", true},
		{"git --exec-path=/x --namespace n --config-env a=B status", "git status", true},
		{"git --version", "git --version", true},
		{"git --exec-path", "git --exec-path", true},
		{"git -cfoo=bar push", "git -cfoo=bar push", false},
		{"git --frob push", "git --frob push", false},
		{"git -c", "git -c", false},
		{"git status -c x", "git status -c x", true},
	} {
		argv := strings.Fields(tt.argv)
		canon, known, _, ok := CanonicalGit(argv, len(argv))
		if strings.Join(canon, " ") != tt.want || ok != tt.ok || ok && known != len(canon) {
			t.Errorf("CanonicalGit(%q) = %q, %d, %v; want %q, %v", tt.argv, canon, known, ok, tt.want, tt.ok)
		}
	}
}

// TestWritesIntoDotGit: a write into a .git directory (config, hooks,
// HEAD, refs, info) is not an ordinary workspace write, by redirection
// or by a program that names a file there.
func TestWritesIntoDotGit(t *testing.T) {
	p := denyListPolicy(t, "zap")
	checkDecisions(t, p, []decisionCase{
		{`printf '[diff]\n\texternal = zap\n' >> .git/config && git diff`, Ask},
		{"echo '[core] pager = zap' >> ./.git/config", Ask},
		{"echo x > /w/.git/config", Ask},
		{"echo zap > .git/hooks/pre-commit", Ask},
		{"echo 'ref: refs/heads/x' > .git/HEAD", Ask},
		{"echo 0000 > .git/refs/heads/main", Ask},
		{"echo '*.c diff=x' >> .git/info/attributes", Ask},
		{"echo 'gitdir: /tmp/x' > sub/.git", Ask},
		{"echo x > sub/.GIT/config", Ask},
		{"cat cfg >| .git/config", Ask},
		{"tee -a .git/config < cfg", Ask},
		{"cp cfg .git/config", Ask},
		{"sed -i s/a/b/ .git/config", Ask},
		{"ln -sf /tmp/x .git/hooks/post-checkout", Ask},
		{"install -m755 x --target-directory=.git/hooks", Ask},
		{"cat .git/HEAD", Allow},
		{"ls .git/refs/heads", Allow},
		{"grep -r url .git/config", Allow},
		{"echo x > .github/workflows/ci.yml", Allow},
		{"git log > .gitlog.txt", Allow},
		{"git add .gitignore", Allow},
	})
}

// TestRunnerOptions: an allow rule does not cover its program's options
// that run a program (nor does Unmatched allow them), unless it names
// them; where the value is a command line, a denied program in it is
// denied.
func TestRunnerOptions(t *testing.T) {
	p := policyOf(t, Ask, true, "allow git fetch", "allow git ls-remote", "allow git clone", "allow rg",
		"allow sort", "allow tar", "allow go build", "allow git grep", "allow git rebase", "allow npm test",
		"allow git fetch --upload-pack=./mine", "allow rsync", "allow kubectl get", "deny zap")
	checkDecisions(t, p, []decisionCase{
		{"git fetch --upload-pack=zap origin", Deny},
		{"git fetch --upload-pack zap origin", Deny},
		{"git fetch origin --upload-pa=zap", Deny},
		{"git ls-remote --exec=zap .", Deny},
		{"git clone -u zap . dst", Deny},
		{"git clone -quzap . dst", Deny},
		{"rg --pre=zap x .", Deny},
		{"rg --pre zap x .", Deny},
		{"sort --compress-program=zap big", Deny},
		{"sort --compress-prog zap big", Deny},
		{"go build -toolexec=zap ./...", Deny},
		{"go build --toolexec zap .", Deny},
		{"git grep -Ozap x", Deny},
		{"git rebase -x zap main", Deny},
		{"git rebase --exec 'make && zap' main", Deny},
		{"tar -I zap -tf a.tar", Deny},
		{"rsync -e 'zap -x' a b", Deny},
		{"git fetch --upload-pack=./x origin", Ask},
		{"git fetch origin --upload-pack ./x", Ask},
		{"rg --hostname-bin=./h x", Ask},
		{"git clone --template=./t src dst", Ask},
		{"git clone -c core.sshCommand=./x src dst", Ask},
		{"npm test --script-shell=./x", Ask},
		{"kubectl get pods --kubeconfig=./k", Ask},
		{`git fetch "$OPT" origin`, Ask},
		{`rg "$V" .`, Ask},
		{"rg -e $V .", Ask}, // $V may be several words
		{"git fetch --upload-pack=./mine origin", Allow},
		{"git fetch origin", Allow},
		{"rg -e \"$V\" .", Allow},
		{"rg -g '*.gz' x", Allow},
		{"rg -zg '*.gz' x", Allow},
		{"sort -k2 -t, x", Allow},
		{"git grep -O x", Allow}, // -O alone: the pager
		{"tar -tf a.tar", Allow},
		{"go build ./...", Allow},
	})
	// Where no rule matches and Unmatched allows, they are asked about too.
	checkDecisions(t, denyListPolicy(t, "zap"), []decisionCase{
		{"git fetch --upload-pack=./x origin", Ask},
		{"git -c core.sshCommand=./x fetch", Ask},
		{"git config diff.external ./x", Ask},
		{"git config core.pager 'zap -x'", Deny},
		{"git config --global alias.x '!zap'", Deny},
		{"git config -e", Ask},
		{"git config user.name x", Allow},
		{"git config --get core.pager", Allow},
		{"git fetch origin", Allow},
	})
}

// TestRunnerGranted: what the user granted, offered by the hint, covers
// the option it names.
func TestRunnerGranted(t *testing.T) {
	p := policyOf(t, Ask, true, "allow git fetch")
	cmd := "git fetch --upload-pack=./x origin"
	v := p.Check(cmd, "/w", "/w")
	if v.Decision != Ask || len(v.Prefixes) != 1 {
		t.Fatalf("%q: %v (%s) %q, want ask with one hint", cmd, v.Decision, v.Reason, v.Prefixes)
	}
	r, err := NewRule(Allow, v.Prefixes[0], "granted")
	if err != nil {
		t.Fatal(err)
	}
	p.Granted = []Rule{r}
	if v := p.Check(cmd, "/w", "/w"); v.Decision != Allow {
		t.Errorf("%q after granting %q: %v (%s)", cmd, r.Pattern, v.Decision, v.Reason)
	}
}

// TestSignaturePlaceholders: a format that verifies signatures (with a
// modifier too) runs gpg: not read-only.
func TestSignaturePlaceholders(t *testing.T) {
	checkDecisions(t, readOnlyPolicy(), []decisionCase{
		{"git log --format='%+G?' -1", Ask},
		{"git log --format='%-G?' -1", Ask},
		{"git log --format='% G?' -1", Ask},
		{"git log '--pretty=format:%h %+GS'", Ask},
		{"git show -s --format='%-GK'", Ask},
		{"git log --format=%GG", Ask},
		{"git for-each-ref '--format=%(signature)'", Ask},
		{"git branch --format '%(signature:signer)'", Ask},
		{`git log --format="$F"`, Ask},
		{"git log --format='%_G?' -1", Allow},
		{"git log --format='%h %s' -1", Allow},
	})
}

// TestEnvironmentAllowlist: only variables known harmless go into the
// environment of the programs a command runs, however they get there; a
// command line's value is checked as one.
func TestEnvironmentAllowlist(t *testing.T) {
	p := denyListPolicy(t, "zap")
	checkDecisions(t, p, []decisionCase{
		{"GOCACHEPROG=zap go build", Ask},
		{"GOAUTH=zap go mod download", Ask},
		{"GOCACHE=/tmp/c go build", Ask},
		{"GOMODCACHE=/tmp/m go list -m", Ask},
		{"GOFLAGS=-toolexec=zap go build", Ask},
		{"GOFLAGS='-mod=mod -toolexec=zap' go list", Ask},
		{"PYTHONUSERBASE=./u python3 -m site", Ask},
		{"PYTHONSTARTUP=./s python3", Ask},
		{"npm_config_script_shell=zap npm test", Ask},
		{"NPM_CONFIG_SCRIPT_SHELL=zap npm test", Ask},
		{"npm_config_foo=1 npm test", Ask},
		{"KUBECONFIG=./k kubectl get pods", Ask},
		{"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!zap' git x", Ask},
		{"MY_APP_FLAG=1 ./build.sh", Ask},
		{"export GOFLAGS=-toolexec=zap; go build", Ask},
		{"declare -x GOCACHEPROG=zap; go build", Ask},
		{"typeset -rx KUBECONFIG=k; kubectl get pods", Ask},
		{"export 'GOFLAGS=-toolexec=zap'; go build", Ask},
		{"env GOAUTH=zap go get x", Ask},
		{"GOFLAGS=-toolexec=zap; export GOFLAGS; go build", Ask},
		{"read -r GOFLAGS < f; export GOFLAGS; go build", Ask},
		{"set -a; GOFLAGS=-toolexec=zap; go build", Ask},
		{"set -o allexport; X=1; ./build.sh", Ask},
		{`set -"a"; GOFLAGS=-toolexec=zap; go build`, Ask},
		{"'se't -ea; GOFLAGS=-toolexec=zap; go build", Ask},
		{"shopt -so allexport; GOFLAGS=-toolexec=zap; go build", Ask},
		{"eval 'set -a'; GOFLAGS=-toolexec=zap; go build", Ask},
		{"bash -ac 'GOFLAGS=-toolexec=zap go build'", Ask},
		{"set -a; for GOFLAGS in -toolexec=zap; do go build; done", Ask},
		{"set $OPTS; GOFLAGS=x; go build", Ask},
		{"set -k; go build GOFLAGS=-toolexec=zap", Ask},
		{"PAGER=zap git log", Deny},
		{"GIT_PAGER='zap -x' git log", Deny},
		{"EDITOR=zap git commit", Deny},
		{"export VISUAL=zap; git commit", Deny},
		{"PAGER=$P git log", Ask},
		{"LC_ALL=C sort x", Allow},
		{"LANG=C TZ=UTC date", Allow},
		{"NO_COLOR=1 git log", Allow},
		{"GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go list ./...", Allow},
		{"GOFLAGS=-mod=mod go list ./...", Allow},
		{"GOTOOLCHAIN=local go version", Allow},
		{"PAGER=cat git log", Allow},
		{"export GIT_PAGER=cat; git log", Allow},
		{"IFS= read -r line < f; echo \"$line\"", Allow},
		{"x=1; y=$x; echo $y", Allow},
		{"FILES=$(ls); echo $FILES", Allow},
		{"export PATH; ls", Allow},
		{"set -e; set -o pipefail; ls", Allow},
	})
}

// TestGoNetwork: go commands that load the whole module graph or ask the
// module proxy may download: not read-only.
func TestGoNetwork(t *testing.T) {
	checkDecisions(t, readOnlyPolicy(), []decisionCase{
		{"go list -m all", Ask},
		{"go list -m -json all", Ask},
		{"go list -m golang.org/x/sys@latest", Ask},
		{"go list -m -f '{{.Version}}' golang.org/x/sys@v0.1.0", Ask},
		{"go list -m -u all", Ask},
		{"go list -m -versions golang.org/x/sys", Ask},
		{"go list -m golang.org/x/sys", Ask},
		{"go mod graph", Ask},
		{"go mod why golang.org/x/sys", Ask},
		{"go mod why -m golang.org/x/sys", Ask},
		{"go mod edit -require=x@v1", Ask},
		{"go mod edit -json -droprequire=x", Ask}, // it prints instead of writing, but the table lists no edit
		{"go list -m", Allow},
		{"go list -m -json", Allow},
		{"go mod edit -json", Allow},
		{"go mod edit -print go.mod", Allow},
	})
}

// TestPriorityWrappers: a wrapper that raises the priority of what it
// runs needs a rule of its own.
func TestPriorityWrappers(t *testing.T) {
	checkDecisions(t, readOnlyPolicy(), []decisionCase{
		{"chrt -f 99 ls", Ask},
		{"chrt --fifo 99 ls", Ask},
		{"chrt -r 1 ls", Ask},
		{"chrt 10 ls", Ask},
		{"chrt -p 99 1", Ask},
		{"nice -n -20 ls", Ask},
		{"nice -n-5 ls", Ask},
		{"nice --adjustment=-5 ls", Ask},
		{"nice --adj -5 ls", Ask},
		{"nice --20 ls", Ask},
		{`nice -n "$N" ls`, Ask},
		{"ionice -c 1 ls", Ask},
		{"ionice -c1 ls", Ask},
		{"ionice -c realtime ls", Ask},
		{"ionice --class=real ls", Ask},
		{"taskset -c 0 chrt -f 99 ls", Ask},
		{"taskset 1 nice -n -1 ls", Ask},
		{`date -d {"x","-s","2020"}`, Ask},
		{"date -s 2020-01-01", Ask},
		{`date +{"%s","-s"}`, Ask},
		{"date --set=2020-01-01", Ask},
		{"date --se 2020-01-01", Ask},
		{"nice ls", Allow},
		{"nice -n 5 ls", Allow},
		{"nice -20 ls", Allow}, // an adjustment of +20
		{"ionice -c 3 ls", Allow},
		{"ionice -c2 -n7 ls", Allow},
		{"chrt -b 0 ls", Allow},
		{"chrt -o 0 ls", Allow},
		{"chrt --idle 0 ls", Allow},
		{"taskset 1 ls", Allow},
		{"date +%s", Allow},
	})
}

// TestExecBypassPrograms: the static check asks about (at least) every
// case of testdata/execbypass/programs.txtar under a deny list of its
// deny rules (Unmatched allows, with the built-in tables), and denies
// those where it can see the denied program run.
func TestExecBypassPrograms(t *testing.T) {
	cases := checkExecBypasses(t, "programs.txtar", denyProvable, func(deny []string) *Policy {
		return denyListPolicy(t, deny...)
	})
	if len(cases) < 30 {
		t.Fatalf("%d cases, want at least 30", len(cases))
	}
}

// denyProvable are the cases whose denied program the static check sees
// run: in a value that is a command line, in git's argv.
var denyProvable = map[string]bool{
	"git-options-hide-subcommand/c": true, "git-options-hide-subcommand/git-dir": true,
	"git-options-hide-subcommand/work-tree-f": true, "git-options-hide-subcommand/C-no-replace-objects": true,
	"git-c-runs/alias-bang": true, "git-c-runs/alias-bang-after-C": true, "git-c-runs/fsmonitor": true,
	"git-c-runs/diff-external": true, "dot-git-write/git-config-set": true, "dot-git-write/git-config-local-file": true,
	"runner-option/upload-pack": true, "runner-option/upload-pack-separate": true,
	"runner-option/upload-pack-abbreviated": true, "runner-option/upload-pack-after-operand": true,
	"runner-option/ls-remote-exec": true, "runner-option/clone-u": true, "runner-option/rg-pre": true,
	"runner-option/rg-pre-separate": true, "runner-option/sort-compress-program": true,
	"runner-option/tar-use-compress-program": true, "runner-option/go-toolexec": true,
	"runner-option/git-grep-open-files-in-pager": true, "runner-option/rebase-exec": true,
	"env-var/GIT_EDITOR": true, "env-var/EDITOR": true,
}

// notReadOnly34 are commands of the programs and spellings issue 34 made
// read-only (§3) that write a file, run a program, change a repository
// or the system, or reach the network: each is still asked about.
var notReadOnly34 = []string{
	// git: subcommands beside the read ones, and their writing options.
	"git reflog expire --all", "git reflog delete HEAD@{1}", "git reflog drop", "git reflog -5 expire",
	"git remote add x https://h/x", "git remote rm x", "git remote prune origin", "git remote show origin",
	"git config user.name Foo", "git config --add a.b c", "git config set user.name x", "git config unset user.name",
	"git config edit", "git config -e", "git config --unset a.b", "git config --rename-section a b", "git config src/*",
	`git config "$K"`, "git branch --sort x newbranch", "git branch --format x -D y", "git tag --sort x v2",
	"git branch --points-at HEAD -d old", "git submodule add https://h/x", "git submodule update --init",
	"git submodule foreach ./x", "git submodule sync", "git submodule --quiet add x", "git cherry -v a b c d",
	"git cherry-pick abc", "git notes add -m x", "git notes remove HEAD", "git notes prune", "git notes edit",
	"git range-diff --output=/tmp/x a...b", "/usr/bin/git push", "/tmp/git status", "./git status",
	"/usr/bin/git -c core.pager=./x log", "git grep -e x -O./x", "git grep -e $V", "git show-branch --frob",
	// rg, sed, sort, file with globs and dynamic words.
	"rg foo *", `rg "$V" .`, "rg -e $V .", "rg --pre=./x foo src/*.go", "sed -n 1p *", "sed -i s/a/b/ src/*.go",
	"sed $'e ./x' f", `sed -n "$S" f`, "sort -o out src/*.txt", "sort *", "file *",
	"file -C -m src/*", "wc -l $(./x)",
	// tree clusters.
	"tree -aoL out 2", "tree -aL", "tree -Ro f", "tree -RH . -L 1", "tree -Xo f",
	// Go.
	"gofmt -w .", "gofmt -l -w .", "gofmt -cpuprofile=/tmp/x -l .", "go mod edit -require=x@v1", "go mod edit -fmt",
	"go mod edit -json go.mod other.mod",
	// find -exec with a command that does not only read.
	`find . -exec rm {} \;`, "find . -exec sed -i s/a/b/ {} +", `find . -exec grep -l x {} \; -delete`,
	`find . -execdir sh -c ./x \;`, "find . -exec grep x", `find . -exec {} \;`, `find . -exec ./grep x {} \;`,
	"find * -name x", `find . -exec grep -l x {} \; -exec ./x {} \;`, `find . -ok cat {} \;`,
	// Builtins that change or run.
	"mapfile -C ./x -c 1 a < f", "readarray -C ./x a < f", "read -r PATH < f", "read -a 'a[$(./x)]' < f",
	"umask 000", "ulimit -n 1024", "ulimit -Sn 1", "alias ls=./x", "alias ll='ls -l'", "pushd /tmp && echo x > f",
	// Programs peers list as read-only, with what writes, runs or connects.
	"ss -K dst 1.2.3.4", "ss -D /tmp/x", "ss -N ns -t", "ip addr add 10.0.0.1/24 dev eth0", "ip link set eth0 down",
	"ip -batch cmds", "ip netns exec x ./x", "ip route flush all", "ip -n x addr", "ip", "crontab file",
	"crontab -r", "crontab -e", "crontab", "systemctl stop nginx", "systemctl restart nginx", "systemctl -H h status x",
	"systemctl enable x", "systemctl daemon-reload", "systemctl", "journalctl --vacuum-size=1M", "journalctl --rotate",
	"journalctl --flush", "journalctl --setup-keys", "tar -xf a.tar", "tar -cf a.tar .", "tar xvf a.tar",
	"tar -tf a.tar --to-command=./x", "tar -tf a.tar -I ./x", "tar tfI a.tar ./x", "tar -tf h:a.tar",
	"tar -tf a.tar --checkpoint-action=exec=./x", "tar --delete -f a.tar x", "tar -tvf a.tar -F ./x", "tar tf",
	"tar -tf a.tar --overwrite", "unzip a.zip", "unzip -o a.zip -d /tmp", "unzip -l a.zip -d /tmp", "nm --plugin x a.o",
	"nm --plug=x a.o", `nm "$F"`, "docker run x", "docker -H ssh://h ps", "docker --config ./c ps",
	"docker exec web sh", "docker logs web web2", "docker rm x", "docker ps; docker stop x", "docker", "kubectl delete pod x",
	"kubectl exec web -- sh", "kubectl get pods --kubeconfig=./k", "kubectl get pods -s https://h", "kubectl --token x get pods",
	"kubectl apply -f x.yaml", "kubectl config set-context x", "kubectl config use-context x", "kubectl cp a b",
	"kubectl port-forward web 80", "kubectl logs web --as admin", "kubectl", "kubectl plugin-x", "gh pr create",
	"gh pr view 1 --web", "gh pr view -w 1", "gh api repos/x", "gh pr merge 1", "gh auth status -t", "gh browse",
	"gh issue close 3", "gh pr checkout 1", "gh run rerun 1", "gh release download x", "gh repo clone x", "gh",
	"top", "top -n 1",
	// zsh strings that are not plain words.
	"zsh -lc 'ls *(e:./x:)'", "zsh -c '=x'", "zsh -c 'rm x'", `zsh -c "$X"`, "zsh script.zsh", "zsh -c 'ls $(./x)'",
	"zsh -c 'ls >/tmp/x'", "zsh -c 'echo ~root'",
}

// TestNotReadOnly34: every command of notReadOnly34 is asked about.
func TestNotReadOnly34(t *testing.T) {
	p := readOnlyPolicy()
	for _, cmd := range notReadOnly34 {
		if v := p.Check(cmd, "/w", "/w"); v.Decision != Ask {
			t.Errorf("Check(%q) = %v (%s), want ask", cmd, v.Decision, v.Reason)
		}
	}
}

// TestReadOnlyTablesAlone: the tables themselves (which the exec-time
// check may read without the walk that also checks find's -exec command
// and runner options) refuse what the walk would catch.
func TestReadOnlyTablesAlone(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want bool
	}{
		{[]string{"find", ".", "-exec", "./x", "{}", ";"}, false},
		{[]string{"find", ".", "-exec", "rm", "{}", "+"}, false},
		{[]string{"find", ".", "-exec", "grep", "-l", "x", "{}", "+"}, true},
		{[]string{"rg", "-e", dynamicWord, "."}, false}, // $V: may be several words, an option among them
		{[]string{"rg", "-e", fieldWord, "."}, true},    // "$V": one word, the pattern
		{[]string{"rg", "--regexp", dynamicWord, "."}, false},
		{[]string{"rg", fieldWord, "."}, false},
		{[]string{"rg", "x", globPrefix + "src/"}, true},
		{[]string{"rg", "x", globPrefix}, false},
		{[]string{"sed", "-n", "1p", "--", globPrefix}, true},
		{[]string{"git", "grep", "-e", fieldWord}, true},
		{[]string{"git", "config", fieldWord}, false},
		{[]string{"/usr/bin/git", "status"}, true},
		{[]string{"/opt/x/git", "status"}, false},
	} {
		if got := readOnly(tt.argv, knownOf(tt.argv)); got != tt.want {
			t.Errorf("readOnly(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

// TestDenyRule: the exec-time check's reading of a real argv.
func TestDenyRule(t *testing.T) {
	p := denyListPolicy(t, "zap", "git push --force", "rm -rf")
	for _, tt := range []struct {
		argv string
		want string // the rule's pattern, or ""
	}{
		{"zap", "zap"},
		{"/tmp/bin/zap -x", "zap"},
		{"git -c a.b=c push --force r.git HEAD:main", "git push --force"},
		{"/usr/bin/git --git-dir=.git push -q --force r", "git push --force"},
		{"git --work-tree . push -f", "git push --force"},
		{"git -C . --no-replace-objects push origin +main", "git push --force"},
		{"git --frob push --force", "git push --force"},
		{"git push origin main", ""},
		{"git -c a.b=c status", ""},
		{"rm -r -f x", "rm -rf"},
		{"rm x", ""},
	} {
		r := p.DenyRule(strings.Fields(tt.argv))
		got := ""
		if r != nil {
			got = r.Pattern
		}
		if got != tt.want {
			t.Errorf("DenyRule(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}
