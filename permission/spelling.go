package permission

import (
	"path"
	"strings"
	"sync"
)

// A rule's options mean an option however a command spells it. The words
// of a pattern after its command (and subcommand) that start with - are
// options: a deny or ask rule matches a command that has each of them, in
// any order and spelling its program accepts (clustered short options,
// long forms and their abbreviations, --opt=value), among any other
// options; and its other words, the operands, in order. A word !OPT in an
// allow rule excludes the commands that have OPT in any spelling (!WORD,
// those with an operand WORD).
//
// Spellings are known for the programs of optionSpellings; for others a
// short option is matched alone or within a cluster, and a long one as
// written or abbreviated.

// spelling is what a program's options are called.
type spelling struct {
	// names maps each spelling of an option to the name it is known by:
	// "-R": "-r", "--recursive": "-r".
	names map[string]string
	// valued are the options that take a value (by the name they are
	// known by), whose value is not an operand.
	valued map[string]bool
	// operand, when set, gives the options an operand implies (git push
	// +main forces, :main deletes).
	operand func(op string) []string
	// implies are options that stand for others (git branch -D is
	// --delete --force).
	implies map[string][]string
}

// spellingOf builds a spelling from groups of equal options ("-r -R
// --recursive": the first is the name) and valued options.
func spellingOf(groups []string, valued string, operand func(string) []string) *spelling {
	s := &spelling{names: map[string]string{}, valued: map[string]bool{}, operand: operand}
	for _, g := range groups {
		f := strings.Fields(g)
		for _, o := range f {
			s.names[o] = f[0]
		}
	}
	for _, v := range strings.Fields(valued) {
		s.valued[s.name(v)] = true
	}
	return s
}

// withImplied makes option o stand for the options of list.
func (s *spelling) withImplied(o, list string) *spelling {
	if s.implies == nil {
		s.implies = map[string][]string{}
	}
	s.implies[o] = strings.Fields(list)
	return s
}

// add records option o of a command, and the options it stands for.
func (sp *spelled) add(s *spelling, o string) {
	sp.opts[o] = true
	if s != nil {
		for _, i := range s.implies[o] {
			sp.opts[i] = true
		}
	}
}

// name is the name option o is known by: itself, or the only long
// option it abbreviates.
func (s *spelling) name(o string) string {
	if n, ok := s.names[o]; ok {
		return n
	}
	if !strings.HasPrefix(o, "--") || len(o) < 4 {
		return o
	}
	found := ""
	for long, n := range s.names {
		if strings.HasPrefix(long, o) && strings.HasPrefix(long, "--") {
			if found != "" && found != n {
				return o // ambiguous
			}
			found = n
		}
	}
	if found == "" {
		return o
	}
	return found
}

// optionSpellings are the programs (and subcommands) whose options the
// rules know by every spelling: those the README's examples and the
// built-in tables name, and the ones most often denied. Made at first use:
// a process that never checks a rule (a jail's agent is dsh-bash too)
// does not pay for it at its start.
var optionSpellings = sync.OnceValue(func() map[string]*spelling {
	return map[string]*spelling{
		"rm": spellingOf([]string{"-r -R --recursive", "-f --force", "-i", "-I", "--interactive", "-d --dir",
			"-v --verbose", "--one-file-system", "--no-preserve-root", "--preserve-root"}, "", nil),
		"cp": spellingOf([]string{"-r -R --recursive", "-f --force", "-a --archive", "-i --interactive", "-n --no-clobber",
			"-u --update", "-v --verbose", "-l --link", "-s --symbolic-link", "-t --target-directory", "-T --no-target-directory",
			"-p", "-P --no-dereference", "-L --dereference", "-H", "-x --one-file-system", "-b", "--backup", "-S --suffix"},
			"-t -S", nil),
		"mv": spellingOf([]string{"-f --force", "-i --interactive", "-n --no-clobber", "-u --update", "-v --verbose",
			"-t --target-directory", "-T --no-target-directory", "-b", "--backup", "-S --suffix"}, "-t -S", nil),
		"chmod": spellingOf([]string{"-R --recursive", "-v --verbose", "-c --changes", "-f --silent --quiet", "--reference"}, "--reference", nil),
		"chown": spellingOf([]string{"-R --recursive", "-v --verbose", "-c --changes", "-f --silent --quiet", "-h --no-dereference",
			"--reference", "--from"}, "--reference --from", nil),
		"git push": spellingOf([]string{"--force -f --force-with-lease --force-if-includes", "--delete -d", "--all --branches",
			"--mirror", "--tags", "--follow-tags", "-u --set-upstream", "-n --dry-run", "--no-verify", "--verify",
			"-q --quiet", "-v --verbose", "--porcelain", "--prune", "--atomic", "--repo", "-o --push-option",
			"--receive-pack --exec", "--signed", "--no-signed", "-4 --ipv4", "-6 --ipv6"},
			"--repo -o --receive-pack", gitPushOperand),
		"git reset": spellingOf([]string{"--hard", "--soft", "--mixed", "--keep", "--merge", "-q --quiet", "-p --patch",
			"-N --intent-to-add", "--recurse-submodules", "--no-recurse-submodules", "--pathspec-from-file"}, "--pathspec-from-file", nil),
		"git clean": spellingOf([]string{"-f --force", "-d", "-x", "-X", "-n --dry-run", "-i --interactive", "-q --quiet",
			"-e --exclude"}, "-e", nil),
		"git checkout": spellingOf([]string{"-f --force", "-b", "-B", "--orphan", "-t --track", "--no-track", "-m --merge",
			"-p --patch", "-q --quiet", "--detach", "--ours", "--theirs", "--conflict"}, "-b -B --orphan --conflict", nil),
		"git branch": spellingOf([]string{"--delete -d", "-D", "--force -f", "--move -m", "-M", "--copy -c", "-C",
			"-u --set-upstream-to", "--unset-upstream", "-t --track", "--list -l", "-a --all", "-r --remotes",
			"-v --verbose", "-vv", "--edit-description", "--create-reflog"}, "-u", nil).
			withImplied("-D", "--delete --force").withImplied("-M", "--move --force").withImplied("-C", "--copy --force"),
		"git commit": spellingOf([]string{"--amend", "-a --all", "-m --message", "-F --file", "-C --reuse-message",
			"-c --reedit-message", "--no-verify -n", "--allow-empty", "-s --signoff", "-S --gpg-sign", "-q --quiet",
			"-v --verbose", "--fixup", "--squash", "-e --edit", "--no-edit"}, "-m -F -C -c --fixup --squash", nil),
		"git rebase": spellingOf([]string{"-i --interactive", "--onto", "--root", "-x --exec", "--abort", "--continue",
			"--skip", "--autosquash", "--autostash", "-f --force-rebase --no-ff", "-q --quiet", "-v --verbose"},
			"--onto -x", nil),
		"find": spellingOf([]string{"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}, "", nil),
		"sed":  spellingOf([]string{"-i --in-place", "-n --quiet --silent", "-E -r --regexp-extended", "-e --expression", "-f --file", "-s --separate", "-z --null-data"}, "-e -f", nil),
	}
})

// gitPushOperand: a refspec +SRC:DST forces; :DST deletes.
func gitPushOperand(op string) []string {
	switch {
	case strings.HasPrefix(op, "+"):
		return []string{"--force"}
	case strings.HasPrefix(op, ":"):
		return []string{"--delete"}
	}
	return nil
}

// spelled is a command's words after its program (and subcommand): its
// options by the names they are known by, and its operands.
type spelled struct {
	opts     map[string]bool
	operands []string
}

// spellingFor finds the spelling of the program that words name (base
// name, and the subcommand when its table is the subcommand's), and how
// many words name it.
func spellingFor(words []string) (*spelling, int) {
	if len(words) == 0 {
		return nil, 0
	}
	name := path.Base(words[0])
	if len(words) > 1 {
		if s := optionSpellings()[name+" "+words[1]]; s != nil {
			return s, 2
		}
	}
	return optionSpellings()[name], 1
}

// spell reads words (a program's, after its name) with s; s nil reads
// them liberally: each short option of a cluster counts, and the
// cluster itself; a long option counts as written and up to its =.
func spell(s *spelling, words []string) spelled {
	sp := spelled{opts: map[string]bool{}}
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			sp.operands = append(sp.operands, words[i+1:]...)
			return sp
		case strings.HasPrefix(w, "--"):
			name, _, hasValue := strings.Cut(w, "=")
			if s != nil {
				name = s.name(name)
			}
			sp.add(s, name)
			if s != nil && s.valued[name] && !hasValue {
				i++
			}
		case strings.HasPrefix(w, "-") && len(w) > 1:
			i += sp.shorts(s, w, i+1 < len(words))
		default:
			sp.operands = append(sp.operands, w)
			if s != nil && s.operand != nil {
				for _, o := range s.operand(w) {
					sp.add(s, o)
				}
			}
		}
	}
	return sp
}

// shorts reads a cluster of short options (or a one-dash long one,
// -delete); it returns 1 when the next word is the value of its last
// option.
func (sp *spelled) shorts(s *spelling, w string, hasNext bool) int {
	if s == nil || s.names[w] != "" {
		sp.opts[w] = true // as written: -delete, -vv, and the cluster itself
		if s != nil {
			sp.add(s, s.names[w])
			if s.valued[s.names[w]] && hasNext {
				return 1
			}
			return 0
		}
	}
	for j := 1; j < len(w); j++ {
		o := "-" + w[j:j+1]
		if s != nil {
			o = s.name(o)
		}
		sp.add(s, o)
		if s != nil && s.valued[o] {
			if j == len(w)-1 && hasNext {
				return 1
			}
			return 0 // the rest of the cluster is its value
		}
	}
	return 0
}

// has reports whether the command has the rule's option o (by s's
// names, or as written; a long option abbreviated in the command counts;
// with no spelling, a cluster's options each on their own).
func (sp spelled) has(s *spelling, o string) bool {
	if s != nil {
		o = s.name(o)
		if implied := s.implies[o]; implied != nil {
			for _, i := range implied {
				if !sp.has(s, i) {
					return false
				}
			}
			return true
		}
	}
	if sp.opts[o] {
		return true
	}
	if s == nil && !strings.HasPrefix(o, "--") && len(o) > 2 {
		for j := 1; j < len(o); j++ {
			if !sp.opts["-"+o[j:j+1]] {
				return false
			}
		}
		return true
	}
	if !strings.HasPrefix(o, "--") {
		return false
	}
	for c := range sp.opts {
		if len(c) >= 4 && strings.HasPrefix(c, "--") && strings.HasPrefix(o, c) {
			return true // --forc for --force
		}
	}
	return false
}
