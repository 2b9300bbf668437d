package permission

import (
	"path"
	"strings"
)

// What the checker knows of particular programs' arguments, for matching
// them against the rules: the options before a subcommand that hide it
// (canonical), and which programs take a subcommand or run a script (the
// prefixes an ask offers).

// form is one way to read a command's words for the rules: as written,
// or canonical. Allow rules (and the built-in tables) read only the
// forms that allowOK marks: a canonical form that dropped an option
// changing what the command does must not let an allow rule for the
// rest cover it; deny and ask rules read every form.
type form struct {
	args    []string
	known   int
	allowOK bool
	hint    bool // the form whose prefix an ask offers, when allowOK
}

// forms are the ways the rules read a command: as written, then, for a
// program whose options before its subcommand hide it (git -c a=b push),
// without those other than -c (git -c a=b push, which hints offer and
// allow rules may name), and without any (git push).
func (c *checker) forms(base string, args []string, known int) []form {
	forms := []form{{args, known, true, true}}
	if base != "git" {
		return forms
	}
	if part, dropped := gitWithConfig(args); len(part) < len(args) {
		forms = append(forms, form{part, knownOf(part), c.harmlessGitOpts(dropped), true})
	}
	canon, cknown, opts, ok := CanonicalGit(args, known)
	if len(canon) < len(forms[len(forms)-1].args) || cknown != known {
		forms = append(forms, form{canon, cknown, ok && c.harmlessGitOpts(opts), false})
	}
	return forms
}

// gitWithConfig is git's argv without its options before the subcommand
// other than -c and --config-env; dropped are those options.
func gitWithConfig(args []string) (part []string, dropped []GitOption) {
	part = args[:1:1]
	i := 1
	for i < len(args) {
		o, used, ok := gitGlobal(args, i)
		if !ok {
			break
		}
		if o.Name == "-c" || o.Name == "--config-env" {
			part = append(part, args[i:i+used]...)
		} else {
			dropped = append(dropped, o)
		}
		i += used
	}
	return append(part, args[i:]...), dropped
}

// GitOption is one of git's options before its subcommand, with its
// value: Static is false when the value is only known when it runs.
type GitOption struct {
	Name, Value string
	HasValue    bool
	Static      bool
}

// gitGlobalOpts are git's options before its subcommand (git 2.39's
// handle_options, and those later gits added), by whether they take a
// value: 1, as the next word or after =; 2, only as the next word; 3,
// only after =; 0, none. The ones that print and exit (--version, -h,
// --html-path, --exec-path without a value) are not here: what follows
// them does not run, and a rule may name them as a subcommand.
var gitGlobalOpts = map[string]int{
	"-P": 0, "--no-pager": 0, "-p": 0, "--paginate": 0, "--bare": 0, "--no-replace-objects": 0,
	"--literal-pathspecs": 0, "--glob-pathspecs": 0, "--noglob-pathspecs": 0, "--icase-pathspecs": 0,
	"--no-optional-locks": 0, "--no-lazy-fetch": 0, "--no-advice": 0,
	"-C": 2, "-c": 2, "--config-env": 1, "--git-dir": 1, "--work-tree": 1, "--namespace": 1,
	"--super-prefix": 1, "--attr-source": 1, "--list-cmds": 3, "--exec-path": 3,
}

// CanonicalGit is git's argv without its options before the subcommand
// (git -c a=b -C dir push --force is git push --force), for deny and ask
// rules, which name the subcommand; known counts args' leading words
// known statically, cknown the canonical form's. An option git does not
// know (a later git's), or a word among them only known when it runs,
// hides which word is the subcommand: the canonical form is then git
// alone, its subcommand unknown (cknown 1), which a rule naming a
// subcommand cannot tell; ok is then false. opts are the options
// dropped. The exec-time check reads a real argv with it too (all words
// known).
func CanonicalGit(args []string, known int) (canon []string, cknown int, opts []GitOption, ok bool) {
	i := 1
	for ; i < len(args); i++ {
		o, used, isOpt := gitGlobal(args, i)
		if !isOpt {
			if isDynamic(args[i]) && len(opts) > 0 || strings.HasPrefix(args[i], "-") && !gitInfoOpt(args[i]) {
				return unknownSub(args, i), 1, opts, false
			}
			break
		}
		opts = append(opts, o)
		i += used - 1
	}
	canon = unknownSub(args, i)
	return canon, knownOf(canon), opts, true
}

// unknownSub is git's argv without the words before args[i].
func unknownSub(args []string, i int) []string {
	return append([]string{args[0]}, args[i:]...)
}

// gitInfoOpt reports whether a is one of git's options that print and
// exit, or name the subcommand (--version is git version).
func gitInfoOpt(a string) bool {
	switch a {
	case "-v", "--version", "-h", "--help", "--html-path", "--man-path", "--info-path", "--exec-path":
		return true
	}
	return false
}

// gitGlobal reads git's option at args[i] before the subcommand; used
// counts the words it took; ok is false for a word that is not one.
func gitGlobal(args []string, i int) (o GitOption, used int, ok bool) {
	if isDynamic(args[i]) {
		return o, 0, false
	}
	name, v, hasValue := strings.Cut(args[i], "=")
	arity, ok := gitGlobalOpts[name]
	switch {
	case !ok || name == "-c" && hasValue || name == "-C" && hasValue:
		return o, 0, false // -c=x is not an option of git's (and -cx neither)
	case arity == 0:
		return GitOption{Name: name, Static: true}, 1, !hasValue
	case hasValue && arity != 2:
		return GitOption{Name: name, Value: v, HasValue: true, Static: true}, 1, true
	case arity == 3 || i+1 >= len(args) || isDynamic(args[i]) || splits(args[i+1]):
		return o, 0, false // a value that may be split into words hides the subcommand
	}
	v = args[i+1]
	return GitOption{Name: name, Value: v, HasValue: true, Static: !isDynamic(v)}, 2, true
}

// harmlessGitOpts reports whether git's options before its subcommand
// change nothing an allow rule for the rest would care about: output
// and pathspec options, a directory or repository within the workspace,
// configuration that runs nothing (see harmlessGitConfig).
func (c *checker) harmlessGitOpts(opts []GitOption) bool {
	for _, o := range opts {
		switch o.Name {
		case "-P", "--no-pager", "--no-replace-objects", "--literal-pathspecs", "--glob-pathspecs",
			"--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-lazy-fetch", "--no-advice",
			"--namespace":
		case "-C", "--git-dir", "--work-tree":
			if !o.Static || !c.inWorkspace(o.Value) {
				return false
			}
		case "-c":
			key, _, _ := strings.Cut(o.Value, "=")
			if !o.Static || !harmlessGitConfig(key) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// harmlessGitConfigs are git configuration keys (lower case; a * for a
// subsection or name) that run nothing, write nothing and point git
// nowhere else: any other may (core.pager, alias.*, diff.external,
// core.sshCommand, core.fsmonitor, credential.helper, include.path…).
var harmlessGitConfigs = []string{
	"color.*", "color.*.*", "column.*", "advice.*", "core.quotepath", "core.abbrev", "core.autocrlf",
	"core.safecrlf", "core.ignorecase", "core.precomposeunicode", "core.whitespace", "core.commentchar",
	"user.name", "user.email", "author.name", "author.email", "committer.name", "committer.email",
	"init.defaultbranch", "log.date", "log.decorate", "log.abbrevcommit", "log.follow", "log.mailmap",
	"diff.noprefix", "diff.mnemonicprefix", "diff.renames", "diff.renamelimit", "diff.algorithm",
	"diff.context", "diff.interhunkcontext", "diff.colormoved", "diff.relative", "diff.indentheuristic",
	"status.short", "status.branch", "status.showuntrackedfiles", "status.relativepaths", "status.renames",
	"grep.linenumber", "grep.fullname", "grep.column", "grep.patterntype", "grep.extendedregexp",
	"blame.date", "blame.coloring", "i18n.logoutputencoding", "i18n.commitencoding", "gc.auto",
	"fetch.prune", "pull.rebase", "pull.ff", "merge.conflictstyle", "rebase.autostash", "push.default",
	"versionsort.suffix", "tag.sort", "branch.sort", "protocol.version",
}

// harmlessGitConfig reports whether setting the configuration key runs
// nothing (see harmlessGitConfigs).
func harmlessGitConfig(key string) bool {
	key = strings.ToLower(key)
	for _, p := range harmlessGitConfigs {
		if ok, _ := path.Match(p, key); ok && strings.Count(p, ".") == strings.Count(key, ".") {
			return true
		}
	}
	return false
}

// withSubcommands are the commands whose first argument says what they do.
var withSubcommands = map[string]bool{
	"git": true, "go": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "npx": true, "cargo": true,
	"docker": true, "podman": true, "kubectl": true, "helm": true, "pip": true, "pip3": true, "uv": true,
	"poetry": true, "gh": true, "terraform": true, "make": true, "just": true, "dotnet": true, "mvn": true,
	"gradle": true, "rustup": true, "brew": true, "apt": true, "apt-get": true, "systemctl": true,
	"composer": true, "bundle": true, "rake": true, "deno": true, "nix": true, "conda": true,
}

// interpreters run the file named by their first argument: allowing them
// alone would allow any program.
var interpreters = map[string]bool{"python": true, "python3": true, "node": true, "ruby": true, "perl": true,
	"bash": true, "sh": true, "zsh": true, "deno": true, "bun": true, "php": true, "Rscript": true}

// DenyRule is the first deny rule that argv, a program's whole argument
// vector as it is executed (every word known), matches in any form the
// rules read it in (for git, without its options before the subcommand:
// see CanonicalGit), or nil. A rule that cannot tell (git --an-option
// git does not know push: which word is the subcommand?) counts as
// matching. For the exec-time check, which has no shell words to read.
func (p *Policy) DenyRule(argv []string) *Rule {
	if len(argv) == 0 {
		return nil
	}
	forms := [][]string{argv}
	known := []int{len(argv)}
	if path.Base(argv[0]) == "git" {
		part, _ := gitWithConfig(argv)
		canon, cknown, _, _ := CanonicalGit(argv, len(argv))
		forms, known = append(forms, part, canon), append(known, len(part), cknown)
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Decision != Deny {
			continue
		}
		for j, f := range forms {
			if ok, maybe := r.match(f, known[j]); ok || maybe {
				return r
			}
		}
	}
	return nil
}
