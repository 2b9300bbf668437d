package permission

import (
	"strings"
	"testing"
)

// readOnlyPolicy has the built-in tables and no rule.
func readOnlyPolicy() *Policy {
	return &Policy{Unmatched: Ask, ReadOnly: true, Home: "/home/u"}
}

// everydayReadOnly are commands coding agents run to read a project (from
// agents' transcripts and Codex's known-safe tests); each only reads. The
// tables should allow nearly all of them: TestEverydayReadOnly reports the
// share they ask about, which must stay under 5 %.
var everydayReadOnly = []string{
	// Listing and reading files.
	"ls", "ls -la", "ls -lah src/", "ls -1 | head -20", "pwd", "cat go.mod", "cat -n main.go",
	"head -50 README.md", "head -n 100 src/app.ts", "tail -n 30 build.log", "tail -f /dev/null | head -1",
	"wc -l *.go", "wc -c go.sum", "stat main.go", "file bin/app", "file -b --mime-type logo.png",
	"du -sh .", "du -h --max-depth=1 .", "df -h", "tree", "tree -L 2", "tree -a -I node_modules -L 3",
	"nl -ba main.go | sed -n '1,40p'", "nl -nrz Cargo.toml", "tac CHANGELOG.md | head", "rev names.txt",
	"realpath ../x", "readlink -f bin/tool", "basename /a/b/c.go", "dirname /a/b/c.go",
	"xxd bin/app | head", "xxd -l 64 data.bin", "od -c file.bin | head", "hexdump -C blob | head",
	"strings bin/app | grep version", "cmp a.bin b.bin", "md5sum go.sum", "sha256sum dist/*.tar.gz",
	"base64 -d token.txt", "base64 README.md",
	// Searching.
	"grep -rn TODO .", "grep -rn 'func main' --include=*.go .", "grep -c error log.txt",
	"grep -E 'foo|bar' -r src", "grep -l Handler *.go", "rg TODO", "rg -n 'fn main' src",
	"rg --files | head -50", "rg -l Config --type go", "rg -i 'error' -g '*.ts' src/",
	"rg -C 3 panic", "rg --hidden -uu secret", "rg -t py import",
	"find . -name '*.go'", "find . -type f -name '*.ts' -not -path './node_modules/*'",
	"find . -maxdepth 2 -type d", "find src -name '*.test.ts' | wc -l", "find . -newer go.mod -type f",
	"find . -size +1M", "find . -type f -print0 | xargs -0 wc -l", "find . -iname readme*",
	"find . -path ./vendor -prune -o -name '*.go' -print", "find /usr/include -name stdio.h",
	// Reading parts of files.
	"sed -n '1,80p' main.go", "sed -n '120,200p' src/server.ts", "sed -n 10p file.txt",
	"sed -n '/func main/,/^}/p' main.go", "sed 's/foo/bar/g' input.txt", "sed -e 's/a/b/' -e 's/c/d/' f",
	"sed -n '$p' log.txt", "sed '1d' data.csv", "sed -E 's/([0-9]+)/<\\1>/g' f",
	// Text processing in pipes.
	"sort names.txt", "sort -u list.txt", "sort -k2 -n data.txt", "sort -t, -k3 -rn data.csv | head",
	"uniq -c counts.txt", "sort words | uniq -c | sort -rn | head", "git ls-files | xargs wc -l", "git diff -U5", "git log --format=%h%x09%s -5", "cut -d: -f1 /etc/passwd",
	"cut -c1-80 main.go", "paste -sd, list.txt", "tr a-z A-Z < name.txt", "tr -d '\\r' < win.txt",
	"seq 1 10", "seq -w 1 100 | head", "expr 3 + 4", "numfmt --to=iec 1048576", "column -t data.tsv",
	"diff a.txt b.txt", "diff -u old.go new.go", "diff -r dir1 dir2", "comm -12 a b", "join a b",
	"jq . package.json", "jq -r '.scripts | keys[]' package.json", "jq '.dependencies' package.json",
	"fold -w 80 long.txt", "echo hello", "echo $HOME", "printf '%s\\n' a b", "true", "false",
	// Git, reading.
	"git status", "git status --short", "git status -sb", "git status --porcelain=v2",
	"git diff", "git diff --stat", "git diff --cached", "git diff HEAD~1 -- main.go",
	"git diff --name-only main...HEAD", "git diff -w --color=never", "git log", "git log --oneline -20",
	"git log --oneline --graph --decorate --all -30", "git log -p -3 -- src/", "git log --since=2.weeks --author=ann",
	"git log --format='%h %s' -n 10", "git log -S Handler --oneline", "git show", "git show HEAD",
	"git show --stat HEAD~2", "git show HEAD:go.mod", "git branch", "git branch -a", "git branch -vv",
	"git branch --show-current", "git branch --list 'feat*'", "git branch -r --contains HEAD",
	"git rev-parse HEAD", "git rev-parse --show-toplevel", "git rev-parse --abbrev-ref HEAD",
	"git ls-files", "git ls-files -m", "git ls-files --others --exclude-standard", "git blame main.go",
	"git blame -L 10,40 main.go", "git grep -n Handler", "git grep -l TODO -- '*.go'",
	"git shortlog -sn", "git describe --tags", "git describe --always --dirty", "git tag",
	"git tag -l 'v1.*'", "git stash list", "git stash show -p stash@{0}", "git config --get remote.origin.url",
	"git config --list", "git config user.email --get", "git rev-list --count HEAD", "git cat-file -p HEAD",
	"git cat-file -t abc123", "git ls-tree -r HEAD --name-only", "git reflog show -10", "git remote -v",
	"git remote get-url origin", "git merge-base HEAD main", "git log --oneline main..HEAD",
	"git --no-pager log -5", "git -C sub status", "git worktree list", "git for-each-ref --format='%(refname)' refs/heads",
	"git show-ref --tags", "git count-objects -vH", "git check-ignore -v build/out",
	// Go, reading.
	"go version", "go env", "go env GOPATH GOMODCACHE", "go env -json", "go list ./...",
	"go list -m", "go list -json ./cmd/...", "go list -f '{{.Dir}}' ./...", "go doc fmt.Println",
	"go doc -all net/http", "go list -m -json", "go help build",
	// The system.
	"which go", "command -v node", "type ls", "uname -a", "whoami", "id", "hostname", "date",
	"date +%Y-%m-%d", "date -u +%s", "nproc", "printenv PATH", "env", "ps aux", "ps -ef | grep node",
	"uptime", "free -m", "arch", "getconf PAGESIZE", "locale", "test -f go.mod && echo yes",
	"[ -d node_modules ] || echo missing", "cd src && ls", "sleep 1", "pgrep -fl node",
	"python3 --version", "node -v", "npm --version", "gcc --version", "make --version", "perl -v",
	"java -version", "trap 'echo done' EXIT; ls",

	// Issue 34, §3: the false asks found, by program, and their kin.
	// Git.
	"git reflog", "git reflog -10", "git reflog --date=iso -5", "git remote", "git remote -v",
	"git config user.name", "git config --global user.email", "git config get remote.origin.url",
	"git branch --points-at HEAD", "git tag --points-at HEAD", "git for-each-ref --points-at HEAD",
	"git for-each-ref --format '%(refname:short)' refs/heads", "git for-each-ref --sort -committerdate --format '%(refname) %(committerdate)' refs/heads",
	"git branch --sort -committerdate", "git branch --format '%(refname:short)'", "git tag --sort -v:refname",
	"git tag -l --sort=-creatordate 'v*'", "git submodule status", "git submodule", "git submodule status --recursive",
	"git cherry -v", "git cherry main", "git cherry -v origin/main HEAD", "git show-branch", "git show-branch --all",
	"git range-diff main...feature", "git range-diff HEAD~3..HEAD~1 HEAD~2..HEAD", "git notes show HEAD", "git notes list",
	"git notes", "git --git-dir=.git log -3", "git --git-dir .git --work-tree . status -s", "git --work-tree=. diff --stat",
	"/usr/bin/git status", "/usr/bin/git log --oneline -5", `git grep -e "$PATTERN"`, `git grep -n -e "$V" -- '*.go'`,
	"git grep -A 3 -e TODO", "git -c color.ui=never log --oneline -3", "git -c core.quotepath=off status",
	"git -P show --stat HEAD", "git ls-files --format '%(path)'", "git log --format='%h %an %s' --since='1 week ago'",
	"git describe --tags --abbrev=0", "git rev-list --left-right --count main...HEAD", "git merge-base --is-ancestor HEAD main",
	"git rev-parse --git-dir", "git worktree list --porcelain", "git status --porcelain", "git show --name-only HEAD",
	"git log --follow --oneline -- main.go", "git stash show", "git shortlog -sne", "git diff --no-ext-diff HEAD~1",
	// ripgrep.
	"rg -g '*.go' TODO", "rg --glob '!vendor' Handler", `rg -e "$V" src`, "rg --type-add 'web:*.{html,css}' -t web color",
	"rg --no-require-git foo", "rg --mmap foo", `rg -F -e "$PAT" .`, "rg -n --no-heading foo", "rg --files -g '*.md'",
	"rg -tgo -w Handler", "rg -S foo -g '!*.lock'", "rg --iglob '*.TS' x", "rg -l -0 foo | xargs -0 wc -l", "rg foo src/*.go",
	// sed, sort, file, cut with globs or $'\t'.
	"sed -n '1,20p' src/*.go", "sed -n 5p ./*.md", `sort -t $'\t' -k2 data.tsv`, `cut -d $'\t' -f1 data.tsv`,
	"file ./*", "file src/*.go", "sort data/*.txt | uniq -c", "sed -n '/^func /p' pkg/*.go", "file -b ./bin/*",
	`sort -u -t $'\t' -k1,1 a.tsv`, "head -n 3 src/*.ts", "wc -l *.go", `sed $'s/\t/ /g' data.tsv`,
	// tree clusters.
	"tree -aL 2", "tree -dL 1 src", "tree -fi", "tree -aI node_modules", "tree -L 2 -I 'node_modules|dist'",
	// Go.
	"gofmt -l .", "gofmt -d main.go", "gofmt -s -l ./pkg", "go mod edit -json", "go mod edit -print",
	"go list -m -json", "go list -deps ./cmd/app", "go env GOFLAGS GOPROXY",
	// find -exec with a command that reads.
	"find . -name '*.go' -exec grep -l Handler {} +", `find . -type f -exec wc -l {} \;`, `find src -name '*.ts' -exec head -5 {} \;`,
	"find . -name '*.md' -execdir grep -H TODO {} +",
	// Builtins.
	`read -r line < go.mod; echo "$line"`, `while IFS= read -r l; do echo "$l"; done < go.mod`,
	"mapfile -t lines < go.mod; echo ${#lines[@]}", "readarray -t a < list.txt", "pushd src && ls && popd",
	"dirs -v", "umask", "umask -S", "ulimit -a", "ulimit -n", "alias", "alias ll", "type -a ls", "jobs",
	// Programs peers list as read-only.
	"lsof -i :8080", "lsof -p 1234", "ss -tlnp", "ss -s", "ip addr", "ip -br a", "ip route", "ip route get 1.1.1.1",
	"ip link show", "crontab -l", "systemctl status nginx", "systemctl --no-pager status docker",
	"systemctl list-units --type=service --state=running", "systemctl is-active nginx", "journalctl -u nginx -n 50 --no-pager",
	"journalctl --since '1 hour ago' -p err", "getent passwd root", "getent hosts example.com", "tar -tf a.tar",
	"tar -tzf dist.tar.gz", "tar tvf a.tar", "tar -tvjf a.tar.bz2", "unzip -l a.zip", "unzip -v a.zip", "zipinfo a.zip",
	"readelf -h bin/app", "readelf -d bin/app", "nm -D bin/app", "nm bin/app | grep main", "objdump -d bin/app | head",
	"shasum -a 256 go.sum", "shasum -c sums.txt", "docker ps", "docker ps -a --format '{{.Names}}'", "docker logs web",
	"docker logs --tail 100 web", "docker images", "docker inspect web", "docker version", "kubectl get pods",
	"kubectl get pods -n kube-system -o wide", "kubectl describe pod web-1", "kubectl get deploy -A",
	"kubectl logs web-1 --tail=50", "kubectl config current-context", "gh pr list", "gh pr view 12",
	"gh pr checks 12", "gh pr diff 12", "gh issue list --state open", "gh issue view 3 --comments",
	"gh run list -L 5", "gh run view 123 --log-failed", "gh repo view", "gh release list", "top -b -n 1 | head",
	"vmstat 1 2", "lsblk", "findmnt", "who", "size bin/app",
	// A shell that reads plain words.
	"zsh -lc ls", "zsh -c 'git status'", "bash -lc 'ls -la'",
}

// TestEverydayReadOnly: the tables allow nearly every everyday read-only
// command: fewer than 5 % are asked about.
func TestEverydayReadOnly(t *testing.T) {
	p := readOnlyPolicy()
	var asked []string
	for _, cmd := range everydayReadOnly {
		if v := p.Check(cmd, "/w", "/w"); v.Decision != Allow {
			asked = append(asked, cmd+"  ("+v.Reason+")")
		}
	}
	rate := float64(len(asked)) / float64(len(everydayReadOnly))
	t.Logf("%d everyday read-only commands; %d asked about (%.1f %%)", len(everydayReadOnly), len(asked), 100*rate)
	if len(everydayReadOnly) < 300 {
		t.Errorf("the table has %d commands, want at least 300", len(everydayReadOnly))
	}
	t.Logf("asked:\n%s", strings.Join(asked, "\n"))
	if rate >= 0.05 {
		t.Errorf("%.1f %% asked about, want under 5 %%:\n%s", 100*rate, strings.Join(asked, "\n"))
	}
}

// notReadOnly are commands that write a file, run another program,
// change a repository or the system, or reach the network, through an
// option or operand of a program the tables know. Each must be asked
// about with only the tables active.
var notReadOnly = []string{
	// Options that run a program.
	"rg --pre ./x pattern", "rg --pre=./x pattern", "rg --hostname-bin ./x pattern", "rg --hostname-bin=./x p",
	"rg -z pattern", "rg --search-zip pattern", "rg --pr=./x pattern",
	"sort --compress-program=./x big.txt", "sort --compress-prog ./x big.txt",
	"go build -toolexec=./x ./...", "go vet -vettool=./x ./...", "go list -toolexec=./x ./...",
	"go test -exec ./x ./...", "go test -toolexec ./x ./...", "go build ./...", "go test ./...", "go vet ./...",
	"git diff --ext-diff", "git log -p --ext-diff", "git show --textconv HEAD", "git log --show-signature",
	"git grep -O./x pattern", "git grep --open-files-in-pager=./x pattern", "git cat-file --textconv HEAD:f",
	"git cat-file --filters HEAD:f", "git -c core.pager=./x log", "git -ccore.pager=./x status",
	"git --config-env=core.pager=X log", "git -p log", "git --paginate log", "git log --paginate",
	"find . -exec ./x {} ;", "find . -execdir ./x {} +", "find . -ok ./x {} ;", "find . -okdir ./x {} ;",
	"sed 'e ./x' f", "sed -n '1e ./x' f", "sed 's/a/b/e' f", "sed 's/a/b/ge' f", "sed 's/a/b/gw /tmp/out' f", "sed 's/a/b/x' f", "sed --expression='e ./x' f",
	"tar -xf a.tar --to-command=./x",
	// Writes by option or operand.
	"git log --output=/tmp/out", "git log --outp=/tmp/out", "git diff --output /tmp/out", "git show --output=/tmp/out",
	"sort -o /tmp/out in.txt", "sort --output=/tmp/out in.txt", "sort -o/tmp/out in.txt", "sort -uo /tmp/out in",
	"uniq in.txt /tmp/out", "go build -o /tmp/out .", "tree -o /tmp/out", "tree -o/tmp/out",
	"go test -coverprofile=/tmp/c.out ./...", "sed -i 's/a/b/' f", "sed --in-place 's/a/b/' f",
	"sed -n 'w /tmp/out' f", "sed 's/a/b/w /tmp/out' f", "sed -f script.sed f", "xxd -r dump bin",
	"xxd bin /tmp/out", "base64 in /tmp/out", "shuf -o /tmp/out in", "file -C -m magic",
	"find . -fprint /tmp/out", "find . -fprint0 /tmp/out", "find . -fprintf /tmp/out %p", "find . -fls /tmp/out",
	"find . -delete", "find . -name x -delete",
	// Persistent configuration.
	"go env -w GOFLAGS=-toolexec=./x", "go env -u GOFLAGS", "git config core.fsmonitor ./x",
	"git config --global alias.x '!./x'", "git config user.email a@b", "git config --unset user.email",
	// Branches, tags, remotes, stashes.
	"git branch -d feature", "git branch -D feature", "git branch -f main HEAD~1", "git branch -M main",
	"git branch -m old new", "git branch new-feature", "git branch --set-upstream-to=origin/main",
	"git branch -u origin/main", "git tag v1.0", "git tag -d v1.0", "git tag -a v1 -m x",
	"git remote -v set-url origin https://evil", "git remote -v add x 'ext::sh -c ./x'", "git remote -v update",
	"git remote add origin x", "git remote show origin", "git stash", "git stash drop", "git stash pop",
	"git reflog expire --all", "git reflog delete HEAD@{1}", "git symbolic-ref HEAD refs/heads/x",
	"git worktree add ../x", "git checkout main", "git reset --hard", "git commit -m x", "git push",
	"git fetch", "git pull", "git clean -fd", "git gc", "git rebase main",
	// The network and the system.
	"go list -m -u all", "go list -versions -m golang.org/x/sys", "go mod download", "go mod tidy", "go get x",
	"date -s '2020-01-01'", "date 010100002020", "date --set=tomorrow", "hostname evil", "env ./x",
	"command ./x", "git ls-remote origin", "python3 -c 'import os'", "python3 x.py --version", "node -e 1",
	"npm install", "make", "make --version all", "java -jar x.jar", "perl -e 1", "cargo build",
	// Found by a review: values git takes only attached, xxd's and tree's
	// own option syntax, sed labels, xargs's added words, go list's
	// building options, signature formats, variables that run code.
	"git diff -U --output=/tmp/x", "git log -p -U --output=/tmp/x", "git log --min-parents --output=/tmp/x",
	"git show --format --output=/tmp/x", "git branch --abbrev x --abbrev HEAD~1", "git log --format=%GS",
	"git log --pretty=format:%G?", "xxd -ps in out", "xxd -ps -r -ps hex bin", "tree -Lo 1 /tmp/out",
	"tree -R -H . -L 1", "sed ':a e ./x' f", "sed -n ':a w out' f", "sed 'v 4.2 w out' f", "sed 'b x w out' f",
	"echo -o/tmp/out | xargs sort", "printf '%s\\n' -exec ./x ';' | xargs find .", "xargs rg foo",
	"go list -export -gcflags=-cpuprofile=/x .", "go list -mod=mod -modfile=/x.mod ./...", "go list -compiled .",
	"RIPGREP_CONFIG_PATH=./rgrc rg foo", "GREP='./x grep' zgrep foo a.gz", "GOENV=./goenv go env",
	"CGO_CFLAGS='-wrapper ./x' go list .", "GCONV_PATH=./g git log", "cargo --version", "terraform version",
	// Unknown options of known programs.
	"ls --unknown-that-does-not-exist && git log --frobnicate", "git status --frob", "sort --frob x",
}

// TestNotReadOnly: every command of notReadOnly is asked about.
func TestNotReadOnly(t *testing.T) {
	p := readOnlyPolicy()
	for _, cmd := range notReadOnly {
		if v := p.Check(cmd, "/w", "/w"); v.Decision != Ask {
			t.Errorf("Check(%q) = %v (%s), want ask", cmd, v.Decision, v.Reason)
		}
	}
}

// TestReadOnlyNamesTheBuiltin: an allowed command's verdict names the
// built-in rule.
func TestReadOnlyNamesTheBuiltin(t *testing.T) {
	v := readOnlyPolicy().Check("git log -3", "/w", "/w")
	if v.Decision != Allow || v.Rule == nil || v.Rule.Source != "built-in" {
		t.Errorf("verdict %+v, want an allow by the built-in rule", v)
	}
	if v := (&Policy{Unmatched: Ask}).Check("git log -3", "/w", "/w"); v.Decision != Ask {
		t.Errorf("without ReadOnly: %v, want ask", v.Decision)
	}
}
