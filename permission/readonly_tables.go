package permission

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The tables of Policy.ReadOnly: programs, and the options and operands
// with which they only read. Sources: each program's manual (GNU
// coreutils 9.1, grep 3.8, sed 4.9, findutils 4.9, diffutils 3.8, git
// 2.39, go 1.26, ripgrep 13, jq 1.6, tree 2.1) read for what writes a
// file, runs a program or reaches the network; and Codex's
// command-safety tests (codex-rs/core/src/command_safety), whose cases
// the tests here include. An option the tables do not list makes the
// command an ask: the tables list what is known to only read, not what
// is known to be harmful.

// readOnlyPrograms are the tables, by program name: made at first use, so
// that a process that checks no command (a jail's agent is dsh-bash too)
// does not build them at its start.
var readOnlyPrograms = sync.OnceValue(func() map[string]*roSpec {
	return map[string]*roSpec{
		// Shell builtins and utilities without an option that writes, runs or
		// connects.
		"cat": plain(), "head": plain(), "tail": plain(), "wc": plain(), "ls": plain(), "pwd": plain(),
		"echo": plain(), "printf": plain(), "true": plain(), "false": plain(), ":": plain(), "test": plain(),
		"[": plain(), "cd": plain(), "set": plain(), "shopt": plain(), "break": plain(), "continue": plain(),
		"exit": plain(), "return": plain(), "sleep": plain(), "type": plain(), "which": plain(),
		"stat": plain(), "du": plain(), "df": plain(), "cut": plain(), "diff": plain(), "cmp": plain(),
		"comm": plain(), "grep": plain(), "egrep": plain(), "fgrep": plain(), "nl": plain(), "tac": plain(),
		"rev": plain(), "paste": plain(), "seq": plain(), "tr": plain(), "expr": plain(), "numfmt": plain(),
		"md5sum": plain(), "sha1sum": plain(), "sha224sum": plain(), "sha256sum": plain(), "sha384sum": plain(),
		"sha512sum": plain(), "b2sum": plain(), "cksum": plain(), "sum": plain(), "od": plain(),
		"hexdump": plain(), "strings": plain(), "column": plain(), "ps": plain(), "jq": plain(),
		"basename": plain(), "dirname": plain(), "realpath": plain(), "readlink": plain(), "nproc": plain(),
		"printenv": plain(), "id": plain(), "whoami": plain(), "groups": plain(), "uname": plain(),
		"arch": plain(), "uptime": plain(), "free": plain(), "fold": plain(), "fmt": plain(),
		"expand": plain(), "unexpand": plain(), "join": plain(), "factor": plain(), "tsort": plain(),
		"getconf": plain(), "locale": plain(), "tty": plain(), "lscpu": plain(), "pathchk": plain(),
		"whereis": plain(), "pgrep": plain(), "look": plain(), "zcat": plain(), "zgrep": plain(),
		"trap":  plain(), // the action it sets is checked as a script
		"pushd": plain(), "popd": plain(), "dirs": plain(), "jobs": plain(), "wait": plain(),
		"getent": plain(), "lsof": plain(), "readelf": plain(), "objdump": plain(), "size": plain(),
		"shasum": plain(), "zipinfo": plain(), "lsblk": plain(), "findmnt": plain(), "vmstat": plain(),
		"iostat": plain(), "who": plain(), "w": plain(), "nm": plain().except("--plugin"),

		// Builtins: read and mapfile fill variables (which fills checks), not
		// mapfile -C (a callback); umask and ulimit only print.
		"read":      opts("-r -s -e -a= -d= -i= -n= -N= -p= -t= -u="),
		"mapfile":   opts("-t -d= -n= -O= -s= -u="),
		"readarray": opts("-t -d= -n= -O= -s= -u="),
		"umask":     opts("-S -p").withOps(0),
		"ulimit":    opts("-S -H -a -b -c -d -e -f -i -k -l -m -n -p -q -r -s -t -u -v -x -P -R -T").withOps(0),
		"alias":     {raw: aliasLists},
		"gofmt":     goOpts("-l -d -e -s -r="), // not -w, -cpuprofile
		"top":       opts("-b -n= -d= -p= -u= -U= -c -H -i -o= -O -s -S -w? -1 -E= -e=").withCheck(func(l *roLine) bool { return l.has("-b") }),
		"ss": opts("-H --no-header -O --oneline -n --numeric -r --resolve -a --all -l --listening -o --options " +
			"-e --extended -m --memory -p --processes -i --info --tos --cgroup -s --summary -E --events -Z --context " +
			"-z --contexts -b --bpf -4 --ipv4 -6 --ipv6 -0 --packet -t --tcp -M --mptcp -S --sctp -u --udp -d --dccp " +
			"-w --raw -x --unix --tipc --vsock -f= --family= -A= --query= --socket= -F= --filter="), // not -K (kills), -D (writes), -N
		"ip":      {raw: ipShows},
		"crontab": opts("-l -u=").withOps(0).withCheck(func(l *roLine) bool { return l.has("-l") }),
		"systemctl": opts("--no-pager -l --full -a --all -t= --type= --state= -n= --lines= -o= --output= --user --system " +
			"-q --quiet --plain --no-legend --value -p= --property= -r --recursive --reverse --before --after --failed " +
			"--show-types").withCheck(firstOperandIn("status show cat list-units list-unit-files list-timers list-sockets " +
			"list-dependencies is-active is-enabled is-failed is-system-running get-default list-jobs")), // not -H, -M
		"journalctl": opts("--no-pager -f --follow -e --pager-end -n= --lines= -r --reverse -o= --output= -x --catalog " +
			"-q --quiet -m --merge -b? --boot? -k --dmesg -u= --unit= --user-unit= -t= --identifier= -p= --priority= " +
			"-g= --grep= --case-sensitive? -S= --since= -U= --until= --no-full --full -a --all --user --system -D= " +
			"--directory= --file= --output-fields= --utc --no-hostname --list-boots --disk-usage --header -F= --field= " +
			"-N --fields --cursor= --after-cursor= --show-cursor --facility="), // not --vacuum-*, --rotate, --flush, --sync, --setup-keys
		"tar": {raw: tarLists},
		"unzip": opts("-l -v -t -z -Z -p -c -q -qq -C").
			withCheck(func(l *roLine) bool { return l.has("-l", "-v", "-t", "-z", "-Z", "-p", "-c") }), // else it extracts
		"docker": subcommands(map[string]*roSpec{
			"ps":        opts("-a --all -q --quiet -n= --last= -l --latest -s --size --no-trunc -f= --filter= --format=").withOps(0),
			"logs":      opts("-f --follow --since= --until= -n= --tail= -t --timestamps --details").withOps(1),
			"images":    opts("-a --all -q --quiet --digests --no-trunc -f= --filter= --format=").withOps(1),
			"inspect":   opts("-f= --format= -s --size --type="),
			"top":       opts(""),
			"port":      opts("").withOps(2),
			"stats":     opts("--no-stream -a --all --format= --no-trunc"),
			"version":   opts("-f= --format=").withOps(0),
			"info":      opts("-f= --format=").withOps(0),
			"--version": opts("").withOps(0), "-v": opts("").withOps(0),
		}), // not its options before the subcommand (-H, --config, --context)
		"kubectl": opts("-n= --namespace= -o= --output= -l= --selector= -A --all-namespaces -w --watch --watch-only " +
			"--show-labels --sort-by= --field-selector= --no-headers --show-kind -L= --label-columns= --chunk-size= " +
			"--context= --request-timeout= -f= --filename= -R --recursive --ignore-not-found --show-managed-fields " +
			"--template= -c= --container= --tail= --since= --since-time= --timestamps -p --previous --all-containers " +
			"--prefix --limit-bytes= --client --raw= --version").withCheck(kubectlReads), // not --kubeconfig, -s, --server, --token, --as
		"gh": opts("-R= --repo= -L= --limit= -s= --state= -a= --assignee= -A= --author= -l= --label= -B= --base= " +
			"-H= --head= --json= -q= --jq= -t= --template= -c --comments --name-only --patch --color= -S= --search= " +
			"-b= --branch= --log --log-failed --exit-status --verbose -u= --user= -e= --event= " +
			"--required --interval= -j= --job= --attempt= --exclude-drafts --exclude-pre-releases --order= " +
			"--sort= --version").withCheck(ghReads), // not --web (a browser), api (it posts), auth, browse

		// Toolchains, asked only for their version. Not cargo, rustc and
		// rustup (a project's rust-toolchain.toml names the binary they run),
		// yarn and pnpm (a project's settings name theirs), terraform (it
		// checks for updates over the network).
		"python": versionOnly("--version", "-V"), "python3": versionOnly("--version", "-V"),
		"node": versionOnly("--version", "-v"), "npm": versionOnly("--version", "-v"),
		"deno": versionOnly("--version", "-V"), "bun": versionOnly("--version", "-v"),
		"gcc": versionOnly("--version"), "cc": versionOnly("--version"),
		"clang": versionOnly("--version"), "make": versionOnly("--version", "-v"), "java": versionOnly("-version", "--version"),
		"ruby": versionOnly("--version"), "perl": versionOnly("--version", "-v"), "pip": versionOnly("--version", "-V"),
		"pip3": versionOnly("--version", "-V"), "uv": versionOnly("--version", "-V"),
		"tsc": versionOnly("--version", "-v"),

		"uniq": opts("-c --count -d --repeated -D --all-repeated? -f= --skip-fields= -i --ignore-case " +
			"-s= --skip-chars= -u --unique -w= --check-chars= -z --zero-terminated --group?").withOps(1), // a second operand is written
		"xxd":    {raw: xxdReadOnly}, // its own option syntax (-ps, -cols 8): see xxdReadOnly
		"base64": opts("-d --decode -i --ignore-garbage -w= --wrap=").withOps(1),
		"base32": opts("-d --decode -i --ignore-garbage -w= --wrap=").withOps(1),
		"sort": opts("-b --ignore-leading-blanks -d --dictionary-order -f --ignore-case -g --general-numeric-sort " +
			"-h --human-numeric-sort -i --ignore-nonprinting -M --month-sort -n --numeric-sort -R --random-sort " +
			"--random-source= -r --reverse -V --version-sort --sort= -c --check? -C -k= --key= -m --merge " +
			"-s --stable -S= --buffer-size= -t= --field-separator= -u --unique -z --zero-terminated " +
			"--parallel= --debug --files0-from="), // not -o, -T, --compress-program
		"shuf": opts("-e --echo -i= --input-range= -n= --head-count= --random-source= -r --repeat -z --zero-terminated"),
		"file": opts("-b --brief -i --mime --mime-type --mime-encoding -L --dereference -h --no-dereference " +
			"-z --uncompress -Z --uncompress-noreport -s --special-files -k --keep-going -r --raw -0 --print0 " +
			"-N --no-pad -n --no-buffer -p --preserve-date -e= --exclude= -F= --separator= -f= --files-from= -E " +
			"--extension --apple -l --list -P= --parameter="), // not -C (--compile), -m
		"tree": opts("-a -d -l -f -x -L= -P= -I= --gitignore --ignore-case --matchdirs --metafirst --prune " +
			"--info --infofile= --noreport --charset= --filelimit= --timefmt= -o? -q -N -Q -p -u -g -s -h --si " +
			"--du -D --inodes --device -F -v -t -c -U -r --dirsfirst --filesfirst --sort= -i -A -S -n -C -X -J -H= " +
			"-T= --nolinks --hintro= --houtro= --fromfile").withCheck(func(l *roLine) bool { return !l.has("-o") }).nextWords(), // not -R: with -H it writes 00Tree.html into each directory
		"date": opts("-d= --date= -f= --file= -I? --iso-8601? -R --rfc-email --rfc-3339= -r= --reference= " +
			"-u --utc --universal --debug").withCheck(dateReads),
		"hostname": opts("-a --alias -d --domain -f --fqdn --long -A --all-fqdns -i --ip-address " +
			"-I --all-ip-addresses -s --short -y --yp --nis").withOps(0), // hostname NAME sets it
		"env":     opts("-0 --null -u= --unset= -i --ignore-environment -").withCheck(onlyAssignments), // with a command, a wrapper
		"command": opts("-v -V -p").withCheck(func(l *roLine) bool { return l.has("-v", "-V") }),
		"find":    {raw: findReadOnly, globsOK: true},
		"sed": opts("-n --quiet --silent --debug -e= --expression= -E -r --regexp-extended -s --separate " +
			"--sandbox -u --unbuffered -z --null-data -l= --line-length= --posix --follow-symlinks").withCheck(sedReadOnly),
		"rg": opts("-A= --after-context= -B= --before-context= -C= --context= -c --count --count-matches " +
			"--color= --colors= --column --no-column -e= --regexp= -f= --file= -F --fixed-strings -g= --glob= " +
			"--iglob= --glob-case-insensitive -h --help --hidden --no-hidden -i --ignore-case -S --smart-case -s " +
			"--case-sensitive -l --files-with-matches --files-without-match --files -L --follow -m= --max-count= " +
			"--max-depth= -d= --max-filesize= -n --line-number -N --no-line-number -o --only-matching -p --pretty " +
			"-q --quiet -r= --replace= -t= --type= -T= --type-not= --type-list -u --unrestricted -v --invert-match " +
			"-w --word-regexp -x --line-regexp --json --no-ignore --no-ignore-vcs --no-ignore-dot --no-ignore-parent " +
			"--no-ignore-global --no-ignore-exclude --no-messages --heading --no-heading -H --with-filename " +
			"-I --no-filename --vimgrep -U --multiline --multiline-dotall -P --pcre2 --engine= --sort= --sortr= " +
			"--stats --trim -M= --max-columns= --max-columns-preview -a --text -0 --null --null-data --no-config " +
			"--debug --trace -j= --threads= --byte-offset -b --passthru --line-buffered --block-buffered " +
			"--crlf --encoding= -E= --ignore-file= --ignore-file-case-insensitive --one-file-system " +
			"--path-separator= --field-context-separator= --field-match-separator= --context-separator= " +
			"--no-unicode --unicode -V --version --include-zero --binary --no-binary --type-add= --type-clear= " +
			"--no-require-git --require-git --mmap --no-mmap"), // not --pre, --hostname-bin, -z
		"git": subcommands(gitSubs()),
		"go":  subcommands(goSubs()),
	}
})

// gitRevOpts are git's options of revision walking and formatting (git
// log, shortlog, rev-list), gitDiffOpts its options of diff output. Not
// listed: --output, --ext-diff, --textconv, --show-signature (runs gpg),
// -O/--open-files-in-pager, --paginate, --exec.
const (
	gitRevOpts = "-n= --max-count= --skip= --since= --after= --until= --before= --since-as-filter= " +
		"--author= --committer= --grep= --grep-reflog= -i --regexp-ignore-case -E --extended-regexp " +
		"-F --fixed-strings -P --perl-regexp --basic-regexp --all-match --invert-grep --merges --no-merges " +
		"--min-parents= --max-parents= --no-min-parents --no-max-parents --first-parent --exclude-first-parent-only " +
		"--not --all --branches? --tags? --remotes? --glob= --exclude= --exclude-hidden= --reflog --alternate-refs " +
		"--single-worktree --ignore-missing --bisect --stdin --cherry-mark --cherry-pick --left-only --right-only " +
		"--cherry --walk-reflogs -g --merge --boundary --simplify-by-decoration --full-history --dense --sparse " +
		"--simplify-merges --ancestry-path? --show-pulls --topo-order --date-order --author-date-order --reverse " +
		"--no-walk? --do-walk --pretty? --format= --abbrev-commit --no-abbrev-commit --oneline --encoding= " +
		"--expand-tabs? --no-expand-tabs --notes? --no-notes --show-notes? --standard-notes --no-standard-notes " +
		"--relative-date --date= --parents --children --left-right --graph --show-linear-break? --decorate? " +
		"--no-decorate --decorate-refs= --decorate-refs-exclude= --clear-decorations --source --use-mailmap " +
		"--mailmap --no-mailmap --no-use-mailmap --full-diff --log-size -L= --follow --no-follow --count " +
		"--objects --objects-edge --no-object-names --timestamp --header --in-commit-order --abbrev? " +
		"--no-abbrev --default= -m --cc -c --dd --diff-merges= --no-diff-merges --combined-all-paths " +
		"--remerge-diff -t --root --no-color --color? -z"
	gitDiffOpts = "-p -u --patch -s --no-patch -U= --unified= --output-indicator-new= " +
		"--output-indicator-old= --output-indicator-context= --raw --patch-with-raw -t --indent-heuristic " +
		"--no-indent-heuristic --minimal --patience --histogram --anchored= --diff-algorithm= --stat? " +
		"--stat-width= --stat-name-width= --stat-count= --stat-graph-width= --compact-summary --numstat " +
		"--shortstat -X? --dirstat? --cumulative --dirstat-by-file? --summary --patch-with-stat -z " +
		"--name-only --name-status --submodule? --color? --no-color --color-moved? --no-color-moved " +
		"--color-moved-ws= --no-color-moved-ws --word-diff? --word-diff-regex= --color-words? --no-renames " +
		"--rename-empty --no-rename-empty --check --ws-error-highlight= --full-index --binary --abbrev? " +
		"-B? --break-rewrites? -M? --find-renames? -C? --find-copies? --find-copies-harder -D " +
		"--irreversible-delete -l= --diff-filter= -S= -G= --find-object= --pickaxe-all --pickaxe-regex " +
		"-O= --skip-to= --rotate-to= -R --relative? --no-relative -a --text --ignore-cr-at-eol " +
		"--ignore-space-at-eol -b --ignore-space-change -w --ignore-all-space --ignore-blank-lines " +
		"-I= --ignore-matching-lines= --inter-hunk-context= -W --function-context --exit-code --quiet " +
		"--no-ext-diff --no-textconv --ignore-submodules? --src-prefix= --dst-prefix= --no-prefix " +
		"--default-prefix --line-prefix= --ita-invisible-in-index --ita-visible-in-index --cached --staged " +
		"--merge-base --no-index -1 -2 -3 --base --ours --theirs -0"
	gitGrepOpts = "--cached --untracked --no-index --no-exclude-standard --exclude-standard " +
		"--recurse-submodules -a --text -i --ignore-case -I --max-depth= -r --recursive --no-recursive " +
		"-w --word-regexp -v --invert-match -h -H --full-name -E --extended-regexp -G --basic-regexp " +
		"-P --perl-regexp -F --fixed-strings -n --line-number --column -l --files-with-matches --name-only " +
		"-L --files-without-match -z --null -o --only-matching -c --count --color? --no-color --break " +
		"--heading -p --show-function -A= --after-context= -B= --before-context= -C= --context= " +
		"-W --function-context -m= --max-count= --threads= -f= -e= --and --or --not -q --quiet --all-match"
)

// gitSubs are the git subcommands that only read, with their options. Their
// valued options ("-U=", "--format=") are read as taking their value only
// attached (-U5, --format=%h): git takes the next word for some and not for
// others (-U, --format, --min-parents, --abbrev), and a next word read as
// a value could hide an option; read as an operand, it is checked.
func gitSubs() map[string]*roSpec {
	return map[string]*roSpec{
		"status": gitOpts("-s --short -b --branch --show-stash --porcelain? --long -v --verbose -u? " +
			"--untracked-files? --ignore-submodules? --ignored? -z --column? --no-column --ahead-behind " +
			"--no-ahead-behind --renames --no-renames --find-renames?"),
		"log":         gitOpts(gitRevOpts + " " + gitDiffOpts).withNumeric(),
		"whatchanged": gitOpts(gitRevOpts + " " + gitDiffOpts).withNumeric(),
		"show":        gitOpts(gitRevOpts + " " + gitDiffOpts).withNumeric(),
		"diff":        gitOpts(gitDiffOpts),
		"diff-tree":   gitOpts(gitDiffOpts + " -r --root --merge-base --stdin -m -c --cc -v --no-commit-id --always"),
		"diff-index":  gitOpts(gitDiffOpts + " -m"),
		"diff-files":  gitOpts(gitDiffOpts + " -q"),
		"rev-list": gitOpts(gitRevOpts + " --quiet --disk-usage? --objects --unpacked --filter= --no-filter " +
			"--filter-print-omitted --missing= --exclude-promisor-objects --bisect-vars --bisect-all").withNumeric(),
		"shortlog": gitOpts(gitRevOpts + " -n --numbered -s --summary -e --email --committer --group= -w?").withNumeric(),
		"blame": gitOpts("-b --root --show-stats --progress --no-progress --score-debug -f --show-name -n " +
			"--show-number -p --porcelain --line-porcelain -l -t -S= --reverse? --first-parent -c -s -e " +
			"--show-email -w --ignore-rev= --ignore-revs-file= --color-lines --color-by-age --minimal " +
			"--contents= --date= --encoding= -M? -C? -L= --abbrev? --incremental"),
		"annotate": gitOpts("-b --root --show-stats -l -t -S= --reverse? -p --porcelain -w -M? -C? -L= --contents= --date= --encoding="),
		"grep": gitOpts(gitGrepOpts).withNumeric().nextWord("-e -f -A -B -C -m --max-count --max-depth --threads " +
			"--after-context --before-context --context"),
		"describe":   gitOpts("--dirty? --broken? --all --tags --contains --abbrev= --candidates= --exact-match --debug --long --match= --exclude= --always --first-parent"),
		"rev-parse":  gitOpts(gitRevParseOpts),
		"ls-files":   gitOpts(gitLsFilesOpts).nextWord("--format"),
		"ls-tree":    gitOpts("-d -r -t -l --long -z --name-only --name-status --object-only --full-name --full-tree --abbrev? --format=").nextWord("--format"),
		"cat-file":   gitOpts("-t -s -e -p --mailmap --no-mailmap --use-mailmap --no-use-mailmap --batch? --batch-check? --batch-command? --batch-all-objects --buffer --unordered --allow-unknown-type --follow-symlinks -Z").withOps(2), // not --textconv, --filters
		"merge-base": gitOpts("-a --all --octopus --independent --is-ancestor --fork-point"),
		"name-rev":   gitOpts("--tags --refs= --exclude= --all --annotate-stdin --name-only --no-undefined --always"),
		"show-ref":   gitOpts("--head --branches --tags -d --dereference -s --hash? --verify --abbrev? -q --quiet --exclude-existing? --exists"),
		"for-each-ref": gitOpts("--count= --sort= --format= --color? --shell --perl --python --tcl --points-at= --merged~ " +
			"--no-merged~ --contains~ --no-contains~ --ignore-case --omit-empty --exclude= --include-root-refs").
			nextWord("--count --sort --format --points-at --exclude"),
		"count-objects": gitOpts("-v --verbose -H --human-readable").withOps(0),
		"var":           gitOpts("-l").withOps(1),
		"version":       gitOpts("--build-options").withOps(0),
		"--version":     gitOpts("--build-options").withOps(0),
		"check-ignore":  gitOpts("-q --quiet -v --verbose --stdin -z -n --non-matching --no-index"),
		"check-attr":    gitOpts("-a --all --cached --stdin -z --source="),
		"symbolic-ref":  gitOpts("-q --quiet --short --no-recurse --recurse").withOps(1), // a second operand sets it
		"branch": gitOpts("-a --all -r --remotes -v -vv --verbose -l --list --show-current --contains~ --no-contains~ " +
			"--merged~ --no-merged~ --points-at= --sort= --format= --column? --no-column --color? --no-color -i " +
			"--ignore-case --abbrev= --no-abbrev -q --quiet").withCheck(listsOnly("-l", "--list")).
			nextWord("--points-at --sort --format"),
		"tag": gitOpts("-l --list -n? --contains~ --no-contains~ --merged~ --no-merged~ --points-at= --sort= --format= " +
			"--column? --no-column -i --ignore-case --color? --omit-empty").withCheck(listsOnly("-l", "--list")).
			nextWord("--points-at --sort --format"),
		"remote": &roSpec{subs: map[string]*roSpec{"get-url": gitOpts("--push --all").withOps(1)},
			bare: gitOpts("-v --verbose").withOps(0)}, // git remote lists; not show (it asks the remote)
		"stash": subcommands(map[string]*roSpec{
			"list": gitOpts(gitRevOpts).withNumeric(),
			"show": gitOpts(gitDiffOpts + " --include-untracked -u --only-untracked"),
		}),
		"reflog": &roSpec{subs: map[string]*roSpec{
			"show": gitOpts(gitRevOpts + " " + gitDiffOpts).withNumeric(), "exists": gitOpts("").withOps(1),
		}, bare: gitOpts(gitRevOpts + " " + gitDiffOpts).withNumeric().withCheck(noOperandIn("expire delete drop exists list show write"))}, // git reflog is git reflog show
		"submodule": &roSpec{subs: map[string]*roSpec{"status": gitOpts("--cached --recursive -q --quiet")},
			bare: gitOpts("--cached --recursive -q --quiet").withOps(0)}, // git submodule is git submodule status
		"notes": &roSpec{subs: map[string]*roSpec{"show": gitOpts("").withOps(1), "list": gitOpts("").withOps(1)},
			bare: gitOpts("").withOps(0)},
		"cherry":      gitOpts("-v --abbrev?").withOps(3),
		"show-branch": gitOpts("-a --all -r --remotes --topo-order --date-order --current --color? --no-color --sparse --more= --list --merge-base --independent --no-name --sha1-name --topics -g? --reflog?"),
		"range-diff": gitOpts(gitDiffOpts + " --creation-factor= --no-dual-color --left-only --right-only --no-notes --notes? " +
			"--diff-merges= --remerge-diff"),
		"config": gitOpts("--get --get-all --get-regexp --get-urlmatch -l --list --global --system --local --worktree " +
			"-f= --file= --blob= --name-only -z --null --show-origin --show-scope --type= --bool --int --bool-or-int " +
			"--path --expiry-date --includes --no-includes --default= --fixed-value").withCheck(gitConfigReads),
		"worktree": subcommands(map[string]*roSpec{"list": gitOpts("-v --verbose --porcelain -z --expire=").withOps(0)}),
	}
}

const (
	gitRevParseOpts = "--parseopt-never --sq-quote-never --revs-only --no-revs --flags --no-flags --default= " +
		"--prefix= --verify -q --quiet --sq --short? --not --abbrev-ref? --symbolic --symbolic-full-name --all " +
		"--branches? --tags? --remotes? --glob= --exclude= --disambiguate= --local-env-vars --path-format= " +
		"--git-dir --git-common-dir --resolve-git-dir= --git-path= --show-toplevel --show-superproject-working-tree " +
		"--shared-index-path --absolute-git-dir --is-inside-git-dir --is-inside-work-tree --is-bare-repository " +
		"--is-shallow-repository --show-cdup --show-prefix --show-object-format? --show-ref-format " +
		"--since= --after= --until= --before= --end-of-options"
	gitLsFilesOpts = "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u --unmerged " +
		"-k --killed --directory --no-empty-directory --eol -z --deduplicate -x= --exclude= -X= --exclude-from= " +
		"--exclude-per-directory= --exclude-standard --error-unmatch --with-tree= -t -v -f --full-name " +
		"--recurse-submodules --abbrev? --debug --format= --sparse"
)

// goSubs are the go subcommands that only read. Not listed: build, test,
// vet, run, install, get, generate, mod download/tidy/edit (they build or
// run code, write files or fetch modules); list's -toolexec, -exec, -u,
// -versions, -retracted; env's -w and -u; and what loads the whole module
// graph or asks the module proxy, which downloads: go list -m with an
// operand (all, path@latest, a module), go mod graph, go mod why. (go
// list of packages loads only the modules the build needs, from the
// module cache once they were built; GOPROXY=off would keep any of them
// offline, which this table, reading only the command's words, does not
// see: a rule can allow them.)
func goSubs() map[string]*roSpec {
	return map[string]*roSpec{
		"version": goOpts("-m -v -json"),
		"env":     goOpts("-json -changed"),
		"doc":     goOpts("-all -c -cmd -short -src -u"),
		"list": goOpts("-f= -json? -e -m -deps -test -find -tags= -reuse= -buildvcs? -trimpath -race -msan -asan " +
			"-cover -covermode= -coverpkg= -p= -C= -linkshared -installsuffix= -buildmode= -modcacherw").
			withCheck(func(l *roLine) bool { return !l.has("-m") || len(l.operands) == 0 }), // not -export, -compiled (they build), -gcflags, -mod, -modfile
		"mod": subcommands(map[string]*roSpec{
			"edit": goOpts("-json -print").withOps(1).withCheck(func(l *roLine) bool { return l.has("-json", "-print") }),
		}),
		"help": plain(),
	}
}

// goOpts is opts for a go subcommand, whose options are Go flags.
func goOpts(list string) *roSpec {
	s := opts(list)
	s.goFlags = true
	return s
}

// xxdReadOnly: xxd reads each option as a whole word (-ps is -p, not -p
// -s) and takes a value from the next one; a second operand is the file
// it writes, and -r writes a binary.
func xxdReadOnly(args []string) bool {
	flags := []string{"-a", "-autoskip", "-b", "-bits", "-C", "-capitalize", "-E", "-EBCDIC", "-e", "-i",
		"-include", "-p", "-ps", "-postscript", "-plain", "-u", "-uppercase", "-d"}
	valued := []string{"-c", "-cols", "-g", "-groupsize", "-l", "-len", "-n", "-name", "-o", "-offset", "-s", "-seek"}
	operands := 0
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case slices.Contains(flags, a):
		case slices.Contains(valued, a) && i+1 < len(args):
			i++
		case a == "-" || !strings.HasPrefix(a, "-"):
			operands++
		default:
			return false
		}
	}
	return operands <= 1
}

// versionOnly is a spec for a program that only prints its version when
// given exactly one of flags.
func versionOnly(flags ...string) *roSpec {
	return &roSpec{raw: func(args []string) bool { return len(args) == 1 && slices.Contains(flags, args[0]) }}
}

// gitOpts is opts for a git subcommand: valued options take their value
// only attached (see gitSubs); "~" ones (the next word unless last) stay.
// A format that verifies signatures (%G…: runs gpg) is not read-only.
func gitOpts(list string) *roSpec {
	s := opts(list)
	for k, a := range s.opts {
		if a == value {
			s.opts[k] = optionalValue
		}
	}
	return s.withCheck(noSignatureFormat)
}

// noSignatureFormat: no --format or --pretty verifies signatures (%G?,
// %GS, …, also with a modifier, %+G?, %-G?, % G?; for-each-ref's
// %(signature…)), which runs gpg or the repository's gpg.program; nor
// is one only known when it runs.
func noSignatureFormat(l *roLine) bool {
	for _, o := range []string{"--format", "--pretty"} {
		for _, v := range l.opts[o] {
			if signaturePlaceholder.MatchString(v) || isDynamic(v) {
				return false
			}
		}
	}
	return true
}

// signaturePlaceholder matches a format's placeholders that verify a
// signature.
var signaturePlaceholder = regexp.MustCompile(`%[-+ ]?G|%\(signature`)

// dateReads: date with only +FORMAT operands (date MMDDhhmm sets the
// clock), and no word with braces: bash may expand one the parser reads
// as a single word into several (date -d {"x","-s","2020"} is date -d x
// -s 2020, which sets it).
func dateReads(l *roLine) bool {
	for _, o := range l.operands {
		if !strings.HasPrefix(o, "+") || strings.Contains(o, "{") {
			return false
		}
	}
	for _, vs := range l.opts {
		for _, v := range vs {
			if strings.Contains(v, "{") {
				return false
			}
		}
	}
	return true
}

// onlyAssignments: env without a command prints the environment, with
// NAME=VALUE operands added.
func onlyAssignments(l *roLine) bool {
	for _, o := range l.operands {
		if !isAssign(o) {
			return false
		}
	}
	return true
}

// listsOnly: git branch and git tag list with no operand, or with the
// patterns of an explicit list option; an operand otherwise names what
// they create.
func listsOnly(listOpts ...string) func(*roLine) bool {
	return func(l *roLine) bool { return len(l.operands) == 0 || l.has(listOpts...) }
}

// gitConfigReads: git config only gets or lists (with one of those
// options; a name and a value otherwise set it).
func gitConfigReads(l *roLine) bool {
	ops := l.operands
	for _, o := range ops {
		if isDynamic(o) {
			return false // it may be several words: a name and a value
		}
	}
	switch {
	case l.has("-l", "--list"):
		return len(ops) == 0
	case l.has("--get", "--get-all", "--get-regexp"):
		return len(ops) <= 2
	case l.has("--get-urlmatch"):
		return len(ops) == 2
	case len(ops) == 2 && ops[0] == "get", len(ops) == 1 && ops[0] == "list":
		return true // git 2.46's git config get NAME, git config list
	}
	return len(ops) == 1 // git config NAME gets it
}

// findPrimaries are find's options and tests that only read, with how
// many arguments each takes. Not listed: -exec and -execdir (but with a
// command the tables know to only read, see execReads), -ok, -okdir,
// -delete, -fls, -fprint, -fprint0, -fprintf.
var findPrimaries = map[string]int{
	"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1,
	"-iregex": 1, "-regextype": 1, "-lname": 1, "-ilname": 1, "-type": 1, "-xtype": 1, "-maxdepth": 1,
	"-mindepth": 1, "-size": 1, "-perm": 1, "-user": 1, "-group": 1, "-uid": 1, "-gid": 1, "-links": 1,
	"-inum": 1, "-samefile": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1, "-mtime": 1, "-mmin": 1,
	"-atime": 1, "-amin": 1, "-ctime": 1, "-cmin": 1, "-used": 1, "-fstype": 1, "-context": 1,
	"-printf": 1, "-print": 0, "-print0": 0, "-ls": 0, "-prune": 0, "-quit": 0, "-empty": 0,
	"-readable": 0, "-writable": 0, "-executable": 0, "-nouser": 0, "-nogroup": 0, "-true": 0,
	"-false": 0, "-depth": 0, "-d": 0, "-xdev": 0, "-mount": 0, "-follow": 0, "-noleaf": 0,
	"-daystart": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0, "-warn": 0, "-nowarn": 0,
	"-not": 0, "!": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, "(": 0, ")": 0, ",": 0,
	"-H": 0, "-L": 0, "-P": 0, "-O0": 0, "-O1": 0, "-O2": 0, "-O3": 0,
}

// newerXY matches find's -newerXY tests (-newermt, -newerat, …).
var newerXY = regexp.MustCompile(`^-newer[aBcmt][aBcmt]$`)

// findReadOnly: find with its options, starting points and the
// primaries of findPrimaries only.
func findReadOnly(args []string) bool {
	i := 0
	for i < len(args) && (args[i] == "-H" || args[i] == "-L" || args[i] == "-P" || strings.HasPrefix(args[i], "-O")) {
		i++
	}
	for i < len(args) && !strings.HasPrefix(args[i], "-") && args[i] != "(" && args[i] != "!" {
		i++ // starting points
	}
	for ; i < len(args); i++ {
		if args[i] == "-exec" || args[i] == "-execdir" {
			end, ok := execReads(args, i+1)
			if !ok {
				return false
			}
			i = end
			continue
		}
		n, ok := findPrimaries[args[i]]
		if !ok && newerXY.MatchString(args[i]) {
			n, ok = 1, true
		}
		if !ok {
			return false
		}
		i += n
	}
	return i <= len(args)
}

// execReads reads the command of find's -exec from args[i], up to its ;
// or +, and reports whether the tables know it to only read (find .
// -name '*.go' -exec grep -l x {} +), and where it ends.
func execReads(args []string, i int) (end int, ok bool) {
	end = i
	for end < len(args) && args[end] != ";" && args[end] != "+" {
		end++
	}
	if end >= len(args) || end == i {
		return end, false
	}
	return end, readOnlyCommand(args[i:end], end-i)
}

// readOnlyCommand is readOnly, for the tables to use (a variable, set at
// init: the tables refer to it, and it to them).
var readOnlyCommand func(argv []string, known int) bool

func init() { readOnlyCommand = readOnly }

// aliasLists: alias lists the aliases, or prints the ones it names
// (alias NAME=VALUE defines one).
func aliasLists(args []string) bool {
	for _, a := range args {
		if strings.Contains(a, "=") {
			return false
		}
	}
	return true
}

// noOperandIn: no operand is one of list (git reflog's subcommands, which
// a word where git reflog takes its default, show, would be).
func noOperandIn(list string) func(*roLine) bool {
	set := wordSet(list)
	return func(l *roLine) bool {
		for _, o := range l.operands {
			if set[o] || isDynamic(o) {
				return false
			}
		}
		return true
	}
}

// firstOperandIn: the first operand is one of list (systemctl status).
func firstOperandIn(list string) func(*roLine) bool {
	set := wordSet(list)
	return func(l *roLine) bool { return len(l.operands) > 0 && set[l.operands[0]] }
}

// ipObjects are ip's objects whose show, list and get only read.
var ipObjects = wordSet("addr a address link l route r ro neigh n neighbor neighbour rule ru maddr maddress mroute tunnel")

// ipShows: ip with its output options, an object and nothing, show, list
// or get (ip addr, ip -br a, ip route get 1.1.1.1). Not -batch (runs a
// file of commands), -netns, netns (exec).
func ipShows(args []string) bool {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		switch strings.TrimLeft(args[i], "-") {
		case "4", "6", "br", "brief", "c", "color", "d", "details", "s", "stats", "h", "human", "j", "json",
			"p", "pretty", "o", "oneline", "r", "resolve", "a", "all":
		default:
			return false
		}
		i++
	}
	if i >= len(args) || !ipObjects[args[i]] {
		return false
	}
	rest := args[i+1:]
	return len(rest) == 0 || rest[0] == "show" || rest[0] == "list" || rest[0] == "ls" || rest[0] == "get" || rest[0] == "dev"
}

// tarOpts are tar's options that only read, with --list (or -t): not
// -x, -c, -r, -u, --delete (they write), -I, --to-command,
// --checkpoint-action, --rsh-command, -F (they run programs).
var tarOpts = opts("-t --list -f= --file= -v --verbose -z --gzip --gunzip --ungzip -j --bzip2 -J --xz --lzma " +
	"--lzip --lzop --zstd -a --auto-compress -O --to-stdout -C= --directory= --wildcards --no-wildcards --anchored " +
	"--no-anchored --exclude= -X= --exclude-from= -T= --files-from= --null --numeric-owner --full-time --utc -R " +
	"--block-number -b= --blocking-factor= -B --read-full-records -i --ignore-zeros --force-local " +
	"--quoting-style= --show-transformed-names --strip-components=").withCheck(tarListsLocal)

// tarLists: tar --list, its first word read in tar's old style too (tvf
// a.tar: each letter that takes a value takes the next word).
func tarLists(args []string) bool {
	if len(args) > 0 && args[0] != "" && !strings.HasPrefix(args[0], "-") {
		var expanded []string
		next := 1
		for _, c := range args[0] {
			o := "-" + string(c)
			expanded = append(expanded, o)
			if a, ok := tarOpts.opts[o]; ok && a == value {
				if next >= len(args) {
					return false
				}
				expanded = append(expanded, args[next])
				next++
			}
		}
		args = append(expanded, args[next:]...)
	}
	return tarOpts.allows(args, len(args))
}

// tarListsLocal: tar lists (-t), an archive that is no host:file (which
// it reads through rsh) unless --force-local.
func tarListsLocal(l *roLine) bool {
	if !l.has("-t", "--list") {
		return false
	}
	for _, f := range append(l.opts["-f"], l.opts["--file"]...) {
		if strings.Contains(f, ":") && !l.has("--force-local") {
			return false
		}
	}
	return true
}

// kubectlReads: kubectl get, describe, logs, explain, top, version,
// api-resources and api-versions, config view and the contexts.
func kubectlReads(l *roLine) bool {
	ops := l.operands
	switch {
	case l.has("--version"):
		return len(ops) == 0
	case len(ops) == 0:
		return false
	case ops[0] == "config":
		return len(ops) > 1 && wordSet("view get-contexts current-context get-clusters")[ops[1]]
	}
	return wordSet("get describe logs explain top version api-resources api-versions")[ops[0]]
}

// ghReads: gh's read commands (pr list, issue view, run view --log, …).
func ghReads(l *roLine) bool {
	ops := l.operands
	if l.has("--version") {
		return len(ops) == 0
	}
	if len(ops) == 1 && ops[0] == "version" {
		return true
	}
	if len(ops) < 2 {
		return false
	}
	reads := map[string]string{"pr": "list view status diff checks", "issue": "list view status",
		"repo": "view list", "run": "list view", "release": "list view", "workflow": "list view", "label": "list"}
	return wordSet(reads[ops[0]])[ops[1]]
}
