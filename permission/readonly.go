package permission

import (
	"path"
	"strings"
)

// readOnlyRule is the rule that Policy.ReadOnly's verdicts name.
var readOnlyRule = Rule{Decision: Allow, Pattern: "(a command known to only read)", Source: "built-in"}

// readOnly reports whether argv is a command line the built-in tables
// know to only read: a program of the tables, with only the options and
// operands its table lists (see roSpec).
func readOnly(argv []string, known int) bool {
	if known == 0 {
		return false
	}
	spec := readOnlyPrograms()[path.Base(argv[0])]
	if spec == nil || strings.Contains(argv[0], "/") && !systemDirs[path.Dir(argv[0])] {
		return false // a file of that name is not the program PATH finds
	}
	return spec.allows(argv[1:], known-1)
}

// systemDirs hold the system's programs (/usr/bin/git): a program named
// with one of them is the one installed, not a file of the workspace.
var systemDirs = map[string]bool{"/bin": true, "/usr/bin": true, "/usr/local/bin": true, "/sbin": true, "/usr/sbin": true}

// roSpec is what the tables know of a program's (or a subcommand's)
// command lines that only read.
type roSpec struct {
	// opts are the options that only read (see parseOpts for the form).
	opts map[string]optArity
	// anyOpt says that none of the program's options writes a file, runs
	// a program or reaches the network: any option, and any word only
	// known when it runs, reads only.
	anyOpt bool
	// numeric allows -N options (head -5, git log -3).
	numeric bool
	// goFlags reads options as Go's flag package does: -name, --name,
	// -name=value or -name value, never clustered.
	goFlags bool
	// noClusters takes one short option per word (tree takes each of a
	// cluster's values from the next words, not from the cluster).
	noClusters bool
	// maxOps is the most operands (-1: any number).
	maxOps int
	// subs are the subcommands, when the first operand must be one; the
	// rest of the line is then the subcommand's.
	subs map[string]*roSpec
	// bare, with subs, is the spec of a line whose first word is none of
	// them (git reflog -5 is git reflog show -5; git remote lists).
	bare *roSpec
	// notOpts, with anyOpt, are the options that do not only read (nm
	// --plugin): long ones by any abbreviation.
	notOpts []string
	// nextWordValues reads a cluster of short options as tree and tar's
	// old style do: each option of it that takes a value takes the next
	// word (tree -aL 2, tar tfI a.tar PROG).
	nextWordValues bool
	// check, when set, decides on what was parsed, beyond the options.
	check func(p *roLine) bool
	// raw, when set, decides on the whole line instead (find, whose
	// words are an expression, not options).
	raw func(args []string) bool
	// globsOK lets raw read globs none of whose matches is an option
	// (find . -name readme*): more words, or fewer, of the same kind.
	globsOK bool
}

// optArity says whether an option takes a value.
type optArity int

const (
	noValue         optArity = iota
	value                    // attached, after =, or the next argument
	optionalValue            // only attached (-uno) or after = (--porcelain=v2)
	valueUnlessLast          // as value, but none when it is the last argument (git branch --merged)
)

// roLine is a command line as a table reads it.
type roLine struct {
	opts     map[string][]string // by the name the table gives, with their values
	operands []string
}

// has reports whether the line has any of the options.
func (l *roLine) has(names ...string) bool {
	for _, n := range names {
		if _, ok := l.opts[n]; ok {
			return true
		}
	}
	return false
}

// allows reports whether args (known of them static) only read.
func (s *roSpec) allows(args []string, known int) bool {
	if s.subs != nil {
		if sub := s.subs[first(args)]; sub != nil && known > 0 {
			return sub.allows(args[1:], known-1)
		}
		return s.bare != nil && (len(args) == 0 || known > 0) && s.bare.allows(args, known)
	}
	if s.raw != nil {
		return (known == len(args) || s.globsOK && noOptionPlaceholder(args)) && s.raw(args)
	}
	if s.anyOpt && s.maxOps < 0 {
		return !s.refuses(args) // any option reads, and any number of operands
	}
	line, ok := s.parse(args)
	if !ok || s.maxOps >= 0 && len(line.operands) > s.maxOps {
		return false
	}
	return s.check == nil || s.check(line)
}

// refuses reports whether args has one of notOpts, or a word only known
// when it runs that may be one.
func (s *roSpec) refuses(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(a, "=")
		for _, o := range s.notOpts {
			if mayBeOption(a) || len(name) > 2 && strings.HasPrefix(o, name) {
				return true
			}
		}
	}
	return false
}

// noOptionPlaceholder reports whether every word of args only known when
// it runs is a glob none of whose matches is an option.
func noOptionPlaceholder(args []string) bool {
	for _, a := range args {
		if mayBeOption(a) {
			return false
		}
	}
	return true
}

// first is args' first word, or "".
func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// parse reads args as getopt_long does (options anywhere before --,
// clustered short options, long ones by unambiguous prefix); ok is false
// at an option the table does not list. A word only known when it runs
// may be an option, or several operands: it is read only where it is
// the value of an option that takes the next word ("$x", not $x), or an
// operand that is a glob no match of which is an option (src/*.go),
// where the line takes any number of operands.
func (s *roSpec) parse(args []string) (*roLine, bool) {
	l := &roLine{opts: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case isDynamic(a):
			if mayBeOption(a) || s.maxOps >= 0 {
				return nil, false
			}
			l.operands = append(l.operands, a)
		case a == "--":
			for _, o := range args[i+1:] {
				if splits(o) && s.maxOps >= 0 {
					return nil, false
				}
			}
			l.operands = append(l.operands, args[i+1:]...)
			return l, true
		case a == "-" || !strings.HasPrefix(a, "-"):
			l.operands = append(l.operands, a)
		case s.anyOpt:
			l.opts[a] = nil
		case s.goFlags:
			used, ok := s.goFlag(l, args, i)
			if !ok {
				return nil, false
			}
			i += used - 1
		case strings.HasPrefix(a, "--"):
			used, ok := s.long(l, args, i)
			if !ok {
				return nil, false
			}
			i += used - 1
		default:
			used, ok := s.short(l, args, i)
			if !ok {
				return nil, false
			}
			i += used - 1
		}
	}
	return l, true
}

// long reads the long option at args[i]; used counts the arguments it
// took.
func (s *roSpec) long(l *roLine, args []string, i int) (used int, ok bool) {
	name, v, hasValue := strings.Cut(args[i], "=")
	name, arity, ok := s.lookupLong(name)
	if !ok {
		return 0, false
	}
	return l.record(name, arity, args, i, v, hasValue)
}

// goFlag reads the Go flag at args[i], by its one-dash name.
func (s *roSpec) goFlag(l *roLine, args []string, i int) (used int, ok bool) {
	name := "-" + strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-")
	name, v, hasValue := strings.Cut(name, "=")
	arity, ok := s.opts[name]
	if !ok {
		return 0, false
	}
	if arity == noValue && (v == "true" || v == "false") {
		hasValue = false // -v=true: a boolean flag's value
	}
	return l.record(name, arity, args, i, v, hasValue)
}

// record records the option name (of arity) at args[i], with the value
// v written after = (hasValue), or the next argument; used counts the
// arguments it took.
func (l *roLine) record(name string, arity optArity, args []string, i int, v string, hasValue bool) (used int, ok bool) {
	switch {
	case arity == noValue && hasValue:
		return 0, false
	case !hasValue && (arity == value || arity == valueUnlessLast && i+1 < len(args)):
		if i+1 >= len(args) || splits(args[i+1]) {
			return 0, false
		}
		l.opts[name] = append(l.opts[name], args[i+1])
		return 2, true
	}
	l.opts[name] = append(l.opts[name], v)
	return 1, true
}

// lookupLong finds the long option name. An abbreviation is not taken
// for the option it abbreviates: the program may have another option of
// that exact name, which the table does not list (rg's --pre is not
// --pretty).
func (s *roSpec) lookupLong(name string) (string, optArity, bool) {
	a, ok := s.opts[name]
	return name, a, ok
}

// short reads the cluster of short options at args[i].
func (s *roSpec) short(l *roLine, args []string, i int) (used int, ok bool) {
	a := args[i]
	if s.numeric && allDigits(a[1:]) {
		l.opts["-N"] = append(l.opts["-N"], a[1:])
		return 1, true
	}
	if s.noClusters && len(a) > 2 {
		return 0, false
	}
	if s.nextWordValues {
		return s.nextWordCluster(l, args, i)
	}
	for j := 1; j < len(a); j++ {
		name := "-" + a[j:j+1]
		arity, ok := s.opts[name]
		if !ok {
			return 0, false
		}
		rest := a[j+1:]
		switch {
		case arity == noValue:
			l.opts[name] = append(l.opts[name], "")
			continue
		case rest != "":
			l.opts[name] = append(l.opts[name], rest)
		case arity == optionalValue:
			l.opts[name] = append(l.opts[name], "")
		case i+1 < len(args) && !splits(args[i+1]):
			l.opts[name] = append(l.opts[name], args[i+1])
			return 2, true
		default:
			return 0, false
		}
		return 1, true
	}
	return 1, true
}

// nextWordCluster reads the cluster at args[i] whose options that take a
// value each take the next word in turn (see nextWordValues).
func (s *roSpec) nextWordCluster(l *roLine, args []string, i int) (used int, ok bool) {
	a, used := args[i], 1
	for j := 1; j < len(a); j++ {
		name := "-" + a[j:j+1]
		arity, ok := s.opts[name]
		switch {
		case !ok:
			return 0, false
		case arity == noValue || arity == optionalValue:
			l.opts[name] = append(l.opts[name], "")
		case i+used >= len(args) || splits(args[i+used]):
			return 0, false
		default:
			l.opts[name] = append(l.opts[name], args[i+used])
			used++
		}
	}
	return used, true
}

// allDigits reports whether s is a non-empty string of digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// parseOpts reads a table's option list: words like "-n" and "--count"
// (no value), "-e=" and "--regexp=" (a value), "-u?" and "--porcelain?"
// (an optional value, attached or after =), "--merged~" (a value, but
// none when last).
func parseOpts(list string) map[string]optArity {
	m := map[string]optArity{}
	for _, w := range strings.Fields(list) {
		switch {
		case strings.HasSuffix(w, "="):
			m[strings.TrimSuffix(w, "=")] = value
		case strings.HasSuffix(w, "?"):
			m[strings.TrimSuffix(w, "?")] = optionalValue
		case strings.HasSuffix(w, "~"):
			m[strings.TrimSuffix(w, "~")] = valueUnlessLast
		default:
			m[w] = noValue
		}
	}
	return m
}

// opts makes a spec allowing the options of list and any operands.
func opts(list string) *roSpec { return &roSpec{opts: parseOpts(list), maxOps: -1} }

// plain is a spec for a program none of whose options writes or runs
// anything: every command line of it reads only.
func plain() *roSpec { return &roSpec{anyOpt: true, maxOps: -1} }

// withOps limits s to n operands.
func (s *roSpec) withOps(n int) *roSpec { s.maxOps = n; return s }

// withCheck adds a check to s (both must hold).
func (s *roSpec) withCheck(f func(*roLine) bool) *roSpec {
	if prev := s.check; prev != nil {
		s.check = func(l *roLine) bool { return prev(l) && f(l) }
	} else {
		s.check = f
	}
	return s
}

// nextWord makes the options of list (which s has) take their value from
// the next word too, as git's parse-options does for the options of
// branch, tag, for-each-ref and grep (see gitSubs).
func (s *roSpec) nextWord(list string) *roSpec {
	for _, o := range strings.Fields(list) {
		if _, ok := s.opts[o]; !ok {
			panic("nextWord: no option " + o)
		}
		s.opts[o] = value
	}
	return s
}

// alone makes s take one short option per word.
func (s *roSpec) alone() *roSpec { s.noClusters = true; return s }

// nextWords makes s read clusters as nextWordValues says.
func (s *roSpec) nextWords() *roSpec { s.nextWordValues = true; return s }

// except makes a spec of any option (see plain) refuse the options
// (and their abbreviations) of list.
func (s *roSpec) except(list string) *roSpec { s.notOpts = strings.Fields(list); return s }

// withNumeric allows -N options.
func (s *roSpec) withNumeric() *roSpec { s.numeric = true; return s }

// and makes a spec with the options of s and of more lists.
func (s *roSpec) and(lists ...string) *roSpec {
	out := &roSpec{opts: map[string]optArity{}, maxOps: s.maxOps, numeric: s.numeric, check: s.check}
	for k, v := range s.opts {
		out.opts[k] = v
	}
	for _, list := range lists {
		for k, v := range parseOpts(list) {
			out.opts[k] = v
		}
	}
	return out
}

// subcommands makes a spec whose first operand is one of subs.
func subcommands(subs map[string]*roSpec) *roSpec { return &roSpec{subs: subs} }
