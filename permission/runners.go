package permission

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Options that run a program named on the command line (git fetch
// --upload-pack=PROG, rg --pre PROG, git -c core.pager=PROG) are not
// covered by an allow rule that does not name them: allowing git fetch
// allows fetching, not running any program. Nor are they allowed where
// no rule matches and Policy.Unmatched is Allow: the program they run
// may be a denied one. Where the value is a command line, it is checked
// as one, so that a denied program it runs is denied.

// runnerSpec is what the checker knows of a program's (or a
// subcommand's) options that run programs.
type runnerSpec struct {
	runs    map[string]optArity // the options that run a program
	shell   map[string]bool     // those whose value is a command line
	valued  map[string]optArity // its other options that take a value, to read clusters
	goFlags bool                // options are Go flags: -name, --name, never clustered
}

// runnerSpecOf builds a spec from a list in parseOpts's form, where a
// trailing ! marks a value that is a command line, and valued options.
func runnerSpecOf(list, valued string) *runnerSpec {
	s := &runnerSpec{shell: map[string]bool{}, valued: parseOpts(valued)}
	var plain []string
	for _, w := range strings.Fields(list) {
		if strings.HasSuffix(w, "!") {
			w = strings.TrimSuffix(w, "!")
			s.shell[strings.TrimRight(w, "=?~")] = true
		}
		plain = append(plain, w)
	}
	s.runs = parseOpts(strings.Join(plain, " "))
	return s
}

// transportRunners are git's options that name the program run on the
// other side of a transport (for a local or ssh remote, run by a shell).
const transportRunners = "--upload-pack=! --receive-pack=! --exec=!"

// runnerSpecs are the programs (and git's subcommands, as "git fetch")
// with options that run a program named on the command line. Made at
// first use, as the tables are.
var runnerSpecs = sync.OnceValue(func() map[string]*runnerSpec {
	return map[string]*runnerSpec{
		"rg":             runnerSpecOf("--pre=! --hostname-bin=!", rgValued),
		"sort":           runnerSpecOf("--compress-program=!", "-k= --key= -t= --field-separator= -S= --buffer-size= -o= --output= -T= --temporary-directory="),
		"tar":            runnerSpecOf("-I=! --use-compress-program=! --to-command=! --checkpoint-action= --rsh-command=! -F=! --info-script=! --new-volume-script=!", tarValued),
		"go":             {runs: parseOpts("-toolexec= -exec= -vettool="), shell: map[string]bool{"-toolexec": true, "-exec": true, "-vettool": true}, goFlags: true},
		"go env":         {runs: parseOpts("-w -u"), goFlags: true},
		"npm":            runnerSpecOf("--script-shell=!", ""),
		"pnpm":           runnerSpecOf("--script-shell=!", ""),
		"yarn":           runnerSpecOf("--script-shell=!", ""),
		"npx":            runnerSpecOf("--script-shell=! --shell=! -c=!", ""),
		"rsync":          runnerSpecOf("-e=! --rsh=! --rsync-path=!", ""),
		"kubectl":        runnerSpecOf("--kubeconfig=", ""),
		"docker":         runnerSpecOf("--config=", ""),
		"git fetch":      runnerSpecOf(transportRunners, ""),
		"git pull":       runnerSpecOf(transportRunners, ""),
		"git push":       runnerSpecOf(transportRunners, ""),
		"git ls-remote":  runnerSpecOf(transportRunners, ""),
		"git archive":    runnerSpecOf(transportRunners, ""),
		"git fetch-pack": runnerSpecOf(transportRunners, ""),
		"git send-pack":  runnerSpecOf(transportRunners, ""),
		"git clone":      runnerSpecOf(transportRunners+" -u=! --config= -c= --template=", "-o= --origin= -b= --branch= --depth= --reference= --separate-git-dir= -j= --jobs="),
		"git init":       runnerSpecOf("--template=", ""),
		"git submodule":  runnerSpecOf("--reference=", ""),
		"git rebase":     runnerSpecOf("-x=! --exec=!", "--onto= -s= --strategy= -X= --strategy-option="),
		"git grep":       runnerSpecOf("-O?! --open-files-in-pager?!", "-e= -f= -A= -B= -C= -m= --max-depth= --threads="),
		"git difftool":   runnerSpecOf("-x=! --extcmd=! -t= --tool=", ""),
		"git mergetool":  runnerSpecOf("-t= --tool=", ""),
		"git bisect":     runnerSpecOf("", ""),
		"git filter-branch": runnerSpecOf("--env-filter=! --tree-filter=! --index-filter=! --parent-filter=! --msg-filter=! "+
			"--commit-filter=! --tag-name-filter=!", ""),
	}
})

const (
	rgValued = "-A= --after-context= -B= --before-context= -C= --context= --color= --colors= -e= --regexp= " +
		"-f= --file= -g= --glob= --iglob= -m= --max-count= --max-depth= -d= --max-filesize= -r= --replace= " +
		"-t= --type= -T= --type-not= --type-add= --type-clear= --engine= --sort= --sortr= -M= --max-columns= " +
		"-j= --threads= --encoding= -E= --ignore-file= --path-separator= --field-context-separator= " +
		"--field-match-separator= --context-separator= --pre-glob= --dfa-size-limit= --regex-size-limit="
	tarValued = "-f= --file= -C= --directory= -T= --files-from= -X= --exclude-from= -b= --blocking-factor= " +
		"-H= --format= -V= --label= -K= --starting-file= -N= --newer= -g= --listed-incremental= -L= --tape-length="
)

// runnerHit is an option of a command that runs a program.
type runnerHit struct {
	at     int    // the index of its word
	end    int    // the index after its value
	name   string // the option
	value  string // its value, when static
	static bool   // its value is known (or it takes none)
	shell  bool   // its value is a command line
}

// runnerHits finds the options of argv that run a program (see
// runnerSpecs and gitRunners); dyn is the index of the first word only
// known when it runs that may be one (-1: none).
func runnerHits(argv []string, known int) (hits []runnerHit, dyn int) {
	if known == 0 || len(argv) < 2 {
		return nil, -1
	}
	base, start := path.Base(argv[0]), 1
	if base == "git" {
		var done bool
		hits, start, dyn, done = gitRunners(argv)
		if done {
			return hits, dyn
		}
	}
	spec := runnerSpecs()[base]
	if start < len(argv) {
		if s := runnerSpecs()[base+" "+argv[start]]; s != nil {
			spec, start = s, start+1
		}
	}
	if spec == nil {
		return hits, -1
	}
	more, dyn := spec.hits(argv, start, known)
	return append(hits, more...), dyn
}

// hits reads argv from start as getopt_long and git's parse-options do
// (long options by any prefix, clusters of short ones), and finds the
// options that run programs.
func (s *runnerSpec) hits(argv []string, start, known int) (hits []runnerHit, dyn int) {
	for i := start; i < len(argv); i++ {
		a := argv[i]
		switch {
		case mayBeOption(a):
			return hits, i
		case a == "--":
			return hits, -1
		case a == "-" || !strings.HasPrefix(a, "-"):
		case s.goFlags:
			i = s.goFlag(argv, i, known, &hits)
		case strings.HasPrefix(a, "--"):
			i = s.long(argv, i, known, &hits)
		default:
			i = s.short(argv, i, known, &hits)
		}
		if i < len(argv) && splits(argv[i]) && mayBeOption(argv[i]) {
			return hits, i // a value that may be split into words, options among them
		}
	}
	return hits, -1
}

// long reads the long option at argv[i]: an abbreviation of one that
// runs a program counts as it. It returns the index of its last word.
func (s *runnerSpec) long(argv []string, i, known int, hits *[]runnerHit) int {
	name, v, hasValue := strings.Cut(argv[i], "=")
	for o, arity := range s.runs {
		if arity == optionalValue && !hasValue {
			continue // git grep --open-files-in-pager: the pager git is configured with
		}
		if strings.HasPrefix(o, "--") && strings.HasPrefix(o, name) && len(name) > 2 {
			return s.hit(argv, i, known, o, arity, v, hasValue, hits)
		}
	}
	if arity, ok := s.valued[name]; ok && arity == value && !hasValue {
		return i + 1
	}
	return i
}

// short reads the cluster of short options at argv[i].
func (s *runnerSpec) short(argv []string, i, known int, hits *[]runnerHit) int {
	a := argv[i]
	for j := 1; j < len(a); j++ {
		o, rest := "-"+a[j:j+1], a[j+1:]
		if arity, ok := s.runs[o]; ok && (arity != optionalValue || rest != "") {
			return s.hit(argv, i, known, o, arity, rest, rest != "", hits)
		}
		if arity, ok := s.valued[o]; ok && arity != noValue {
			if rest == "" && arity == value {
				return i + 1
			}
			return i
		}
	}
	return i
}

// goFlag reads the Go flag at argv[i].
func (s *runnerSpec) goFlag(argv []string, i, known int, hits *[]runnerHit) int {
	name, v, hasValue := strings.Cut("-"+strings.TrimLeft(argv[i], "-"), "=")
	if arity, ok := s.runs[name]; ok {
		return s.hit(argv, i, known, name, arity, v, hasValue, hits)
	}
	return i
}

// hit records the option o (of arity) at argv[i], with the value v
// written in its word (hasValue) or the next word, and returns the index
// of its last word.
func (s *runnerSpec) hit(argv []string, i, known int, o string, arity optArity, v string, hasValue bool, hits *[]runnerHit) int {
	h := runnerHit{at: i, end: i + 1, name: o, value: v, static: true, shell: s.shell[o]}
	if !hasValue && arity == value && i+1 < len(argv) {
		h.end, h.value, h.static = i+2, argv[i+1], !isDynamic(argv[i+1])
	}
	*hits = append(*hits, h)
	return h.end - 1
}

// gitRunners finds git's options before its subcommand that run a
// program (-c and --config-env with a key that may, --exec-path=DIR),
// and git config setting such a key (or opening an editor). It returns
// where the subcommand begins, and dyn (see runnerHits); done says there
// is nothing more to read.
func gitRunners(argv []string) (hits []runnerHit, sub, dyn int, done bool) {
	i := 1
	for i < len(argv) {
		o, used, ok := gitGlobal(argv, i)
		if !ok {
			break
		}
		key, _, _ := strings.Cut(o.Value, "=")
		static := o.Static && !isDynamic(argv[i])
		switch {
		case o.Name == "-c" || o.Name == "--config-env":
			if !static || !harmlessGitConfig(key) {
				hits = append(hits, runnerHit{at: i, end: i + used, name: o.Name + " " + key,
					value: configCommand(o.Value), static: static && o.Name == "-c", shell: gitConfigRuns(key)})
			}
		case o.Name == "--exec-path":
			hits = append(hits, runnerHit{at: i, end: i + used, name: o.Name, static: true})
		}
		i += used
	}
	switch {
	case i >= len(argv):
		return hits, i, -1, true
	case isDynamic(argv[i]) || strings.HasPrefix(argv[i], "-") && !gitInfoOpt(argv[i]):
		return hits, i, i, true // the subcommand is hidden
	case argv[i] == "config":
		return append(hits, gitConfigSets(argv, i+1)...), i, -1, true
	}
	return hits, i, -1, false
}

// gitConfigSets finds what git config (its arguments from argv[i]) sets
// that may run a program: a key not known harmless, with its value (git
// config KEY VALUE, git config set KEY VALUE); --edit and edit open an
// editor, rename-section may make a section alias.* or core.*. A read
// (--get, --list, get, list, a name alone) runs nothing.
func gitConfigSets(argv []string, i int) []runnerHit {
	var ops []int
	for j := i; j < len(argv); j++ {
		switch a := argv[j]; {
		case isDynamic(a):
			return []runnerHit{{at: j, end: j + 1, name: "an argument only known when it runs"}}
		case a == "-e" || a == "--edit" || a == "--rename-section":
			return []runnerHit{{at: j, end: j + 1, name: a, static: true}}
		case strings.HasPrefix(a, "--get") || a == "-l" || a == "--list" || a == "--unset" || a == "--unset-all":
			return nil
		case a == "-f" || a == "--file" || a == "--blob" || a == "--type" || a == "--default" || a == "--comment":
			j++ // its value
		case !strings.HasPrefix(a, "-"):
			ops = append(ops, j)
		}
	}
	if len(ops) > 0 {
		switch argv[ops[0]] {
		case "get", "list", "unset", "remove-section":
			return nil
		case "edit", "rename-section":
			return []runnerHit{{at: ops[0], end: ops[0] + 1, name: "config " + argv[ops[0]], static: true}}
		case "set":
			ops = ops[1:]
		}
	}
	if len(ops) < 2 || harmlessGitConfig(argv[ops[0]]) {
		return nil
	}
	key, v := argv[ops[0]], argv[ops[len(ops)-1]]
	return []runnerHit{{at: ops[0], end: ops[len(ops)-1] + 1, name: "config " + key,
		value: configCommand(key + "=" + v), static: true, shell: gitConfigRuns(key)}}
}

// gitConfigCommands are the configuration keys (lower case) whose value
// git runs as a command line (alias.* too, see configCommand).
var gitConfigCommands = []string{
	"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.askpass", "core.gitproxy",
	"sequence.editor", "diff.external", "diff.*.command", "diff.*.textconv", "merge.*.driver",
	"filter.*.clean", "filter.*.smudge", "filter.*.process", "pager.*", "alias.*", "credential.helper",
	"credential.*.helper", "gpg.program", "gpg.*.program", "interactive.difffilter",
	"uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack", "difftool.*.cmd",
	"mergetool.*.cmd", "web.browser", "browser.*.cmd", "man.*.cmd",
}

// gitConfigRuns reports whether git runs the value of key as a command.
func gitConfigRuns(key string) bool {
	key = strings.ToLower(key)
	for _, p := range gitConfigCommands {
		if ok, _ := path.Match(p, key); ok {
			return true
		}
	}
	return false
}

// configCommand is the command line a NAME=VALUE setting runs: its value,
// or for an alias, the git command it stands for (or, with !, the
// command line after it).
func configCommand(setting string) string {
	key, v, _ := strings.Cut(setting, "=")
	if !strings.HasPrefix(strings.ToLower(key), "alias.") {
		return v
	}
	if s, ok := strings.CutPrefix(v, "!"); ok {
		return s
	}
	return "git " + v
}

// runnerValues checks the command lines that a command's options run (git
// -c core.pager=PROG, rg --pre PROG) as the shell reads them, by the
// deny and ask rules: the allow rule that names the option allows them,
// as a wrapper's rule does.
func (c *checker) runnerValues(args []string, known, depth int) {
	hits, _ := runnerHits(args, known)
	for _, h := range hits {
		if h.shell && h.static && h.value != "" {
			c.passedOn++
			c.scriptIn(h.value, depth+1, syntax.LangPOSIX, syntax.LangBash)
			c.passedOn--
		}
	}
}

// uncoveredRunners asks about the options of the form f that run a
// program and that the allow rule best, which decided (or none), does
// not name in its words; it reports whether it asked.
func (c *checker) uncoveredRunners(best *Rule, f form, text string) bool {
	hits, dyn := runnerHits(f.args, f.known)
	cover := coverage(best)
	if dyn >= cover {
		c.unknowable(text, "an argument only known when it runs may be an option that runs a program")
		return true
	}
	asked := false
	for _, h := range hits {
		if h.at < cover {
			continue
		}
		asked = true
		c.raise(Verdict{Decision: Ask, Command: text,
			Reason: fmt.Sprintf("%s has %s, which runs a program no allow rule names", quoteCmd(text), h.name)})
		if !h.static || h.end > len(f.args) {
			c.structural = true
			continue
		}
		c.prefixes = appendNew(c.prefixes, Pattern(f.args[:max(h.end, suggestLen(f.args, f.known))]))
	}
	return asked
}

// coverage is how many of a command's leading words the allow rule r
// names: the options among them are the ones it allows.
func coverage(r *Rule) int {
	if r == nil {
		return 0
	}
	n := len(r.words)
	if n > 0 && r.words[n-1] == "*" {
		n--
	}
	return n
}

// suggestLen is how many of args' words suggest offers.
func suggestLen(args []string, known int) int {
	if known == 0 {
		return 0
	}
	return suggestEnd(path.Base(args[0]), args[:known])
}
