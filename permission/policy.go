package permission

// Policy is a set of rules and what applies to a command none matches.
// The zero Policy allows every command that can be read statically:
// callers with no rules configured do not check at all.
type Policy struct {
	Rules []Rule
	// Unmatched is the decision for a simple command no rule matches:
	// Allow makes the rules a deny list (and an ask list). It never
	// applies to what cannot be known statically, which is Ask whatever
	// it is: a command named by a variable may be a denied one.
	Unmatched Decision
	// Home is what ~ means; empty makes ~ unknown (ask).
	Home string
	// ReadOnly allows, as a built-in allow rule would, the commands the
	// built-in tables know to only read: programs such as ls, grep, sed,
	// find, git log and go list, with only the options and operands known
	// not to write a file, run a program or reach the network (sed -n
	// '1,80p' f, but not sed -i; find -name x, but not find -delete; git
	// branch, but not git branch -D). Any other option makes it an ask.
	ReadOnly bool
	// Granted are allow rules the user gave while asked (always allow
	// git push in this session): unlike Rules, they win over an ask rule
	// (the user has answered it), but never over a deny rule, nor over an
	// ask about what cannot be known statically.
	Granted []Rule
}

// Verdict is the decision on a whole command, and why.
type Verdict struct {
	Decision Decision
	// Rule is the rule that decided, when one did.
	Rule *Rule
	// Command is the simple command (its words) the decision is about.
	Command string
	// Reason says why, in words for the model and the user.
	Reason string
	// Prefixes are, for Ask, the narrowest argv prefixes that, allowed,
	// would have let the command run, written as rules' patterns that
	// NewRule parses (see Pattern: python3 -c 'print(1)'); empty when no
	// prefix rule could: the ask comes from what cannot be known
	// statically.
	Prefixes []string
}

// Check decides on command, which runs in workdir for a session whose
// workspace is workspace (writes outside it are asked about; empty: not
// checked).
func (p *Policy) Check(command, workdir, workspace string) Verdict {
	c := &checker{p: p, workdir: workdir, workspace: workspace}
	c.script(command, 0)
	if c.v.Decision == Ask && !c.structural {
		c.v.Prefixes = c.prefixes
	}
	if c.v.Reason == "" {
		c.v.Reason = "every command it runs is allowed"
	}
	return c.v
}

// checker walks one command, keeping the strongest verdict.
type checker struct {
	p                  *Policy
	workdir, workspace string
	v                  Verdict
	structural         bool            // an ask no prefix rule could answer
	prefixes           []string        // of the simple commands asked about
	changesDir         bool            // the script runs cd, pushd or popd
	relativeWrite      bool            // a write relative to the workdir was read as in it
	ints               map[string]bool // variables declared -i: their values are arithmetic
	keyword            bool            // keyword mode (set -k) may be on: NAME=VALUE words are assignments
	passedOn           int             // checking what an option runs: Policy.Unmatched does not apply
	allexport          bool            // allexport (set -a) may be on: every assignment is to the environment
	assigned           map[string]bool // the variables the script may set (see assignedVars)
	history            bool            // history expansion (set -H) may be on
	src                string          // the whole command, as given
}

// raise keeps v if it is stronger than what was found so far.
func (c *checker) raise(v Verdict) {
	if v.Decision > c.v.Decision || (c.v.Reason == "" && v.Decision == c.v.Decision) {
		c.v = v
	}
}

// unknowable is an ask that no rule can answer.
func (c *checker) unknowable(cmd, reason string) {
	c.structural = true
	c.raise(Verdict{Decision: Ask, Command: cmd, Reason: reason})
}
