package setup

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/toolbash"
)

// Permissions are the permission gate's rules, checked against every
// simple command a bash call would run.
type Permissions struct {
	// Rules are the user's, in order (the configuration file's, then the
	// command line's).
	Rules []RuleSet
	// Default is what a command no rule matches does, "allow" or "ask"
	// ("": each front end's, see Unmatched); DefaultSource says what set
	// it, for the user.
	Default, DefaultSource string
	// NoReadOnly leaves out the built-in rules (the commands known to only
	// read, allowed: see permission.Policy.ReadOnly).
	NoReadOnly bool
	// ProjectRules reads each workspace's ProjectRulesFile too.
	ProjectRules bool
	// ConfigPath is the configuration file that hints name ("": the
	// configuration file).
	ConfigPath string
}

// RuleSet is patterns of one decision from one source (--allow, a file).
type RuleSet struct {
	Source   string
	Decision permission.Decision
	Patterns []string
}

func (s RuleSet) rules() ([]permission.Rule, error) {
	return permission.NewRules(s.Decision, s.Source, s.Patterns...)
}

// DenyPatterns are the patterns of every deny rule, which the executor
// enforces at exec besides the gate (see permission.ExecRules). A
// workspace's own rules (ProjectRules) are the gate's only.
func (p *Permissions) DenyPatterns() []string {
	var deny []string
	for _, s := range p.Rules {
		if s.Decision == permission.Deny {
			deny = append(deny, s.Patterns...)
		}
	}
	return deny
}

// SetFarDeny has the executor enforce deny rules a client gave (a far
// side's handshake: remote.ServeOptions.SetDeny) at exec, beside this
// configuration's own.
func (s *Setup) SetFarDeny(deny []string) error {
	setter, ok := s.exec.(interface{ SetExecRules(*permission.ExecRules) })
	if !ok {
		return errors.New("this executor cannot enforce deny rules at exec")
	}
	r, err := s.cfg.Permissions.execRules(deny...)
	if err != nil {
		return err
	}
	setter.SetExecRules(r)
	return nil
}

// execRules are the deny rules, and the patterns of more, as the executor
// enforces them at exec, nil without any; the programs they name are
// looked up in PATH.
func (p *Permissions) execRules(more ...string) (*permission.ExecRules, error) {
	deny := append(p.DenyPatterns(), more...)
	if len(deny) == 0 {
		return nil, nil
	}
	r, err := permission.NewExecRules(deny, os.Getenv("PATH"))
	if err != nil {
		return nil, configErr(err)
	}
	return r, nil
}

// ProjectRulesFile is where a workspace keeps its rules.
const ProjectRulesFile = ".dsh/permissions.json"

// Configured reports whether commands are checked at all: once a rule or
// a default is configured.
func (p *Permissions) Configured() bool {
	n := 0
	for _, s := range p.Rules {
		n += len(s.Patterns)
	}
	return n > 0 || p.Default != ""
}

// Unmatched is what a command no rule matches does under front (mcp, acp
// or run), and what set it ("" for the front end's default: over MCP it
// runs, as the client asks its user before each call it was not told to
// allow, and run's user typed the command; the ACP agent is the one that
// asks).
func (p *Permissions) Unmatched(front string) (permission.Decision, string) {
	if p.Default != "" {
		d, _ := permission.ParseDecision(p.Default)
		return d, p.DefaultSource
	}
	if front == "acp" {
		return permission.Ask, ""
	}
	return permission.Allow, ""
}

// GateOptions are the permission gate's options under front (mcp, acp or
// run), or nil when neither a rule nor a default is configured (nothing
// is checked: every command runs, or, under acp, every call is asked
// about). Each workspace's own rules are read per call, where
// ProjectRules says so.
func (s *Setup) GateOptions(front string) (*toolbash.GateOptions, error) {
	return s.cfg.Permissions.GateOptions(front)
}

// GateOptions are Setup.GateOptions for these permissions alone.
func (p *Permissions) GateOptions(front string) (*toolbash.GateOptions, error) {
	if !p.Configured() {
		return nil, nil
	}
	pol := &permission.Policy{ReadOnly: !p.NoReadOnly}
	pol.Unmatched, _ = p.Unmatched(front)
	pol.Home, _ = os.UserHomeDir()
	for _, s := range p.Rules {
		rules, err := s.rules()
		if err != nil {
			return nil, err
		}
		pol.Rules = append(pol.Rules, rules...)
	}
	file := cmp.Or(p.ConfigPath, "the configuration file")
	o := &toolbash.GateOptions{Policy: pol, HowToAllow: func(prefix string) string { return howToAllow(prefix, file) }}
	if p.ProjectRules {
		o.Project = newProjectRules().rules
	}
	return o, nil
}

// howToAllow says how the user can allow pattern (a rule's, as
// permission.Pattern writes it): a flag, written for the user's shell, or
// a string of the configuration file in use, written as JSON; each ends
// at a space, so that what is copied is the argument and no more.
func howToAllow(pattern, file string) string {
	return fmt.Sprintf("start dsh-bash with --allow %s or add %s to \"permissions\": {\"allow\": […]} in %s", shellArg(pattern), jsonString(pattern), file)
}

// shellArg quotes s as one argument for a POSIX shell: in single quotes;
// where s holds a single quote, in double quotes when nothing in it is
// special there (easier to read), else in single quotes with each single
// quote closed, escaped and reopened.
func shellArg(s string) string {
	switch {
	case !strings.Contains(s, "'"):
		return "'" + s + "'"
	case !strings.ContainsAny(s, "\"$`\\!"):
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// jsonString is s as a JSON string, as the configuration file holds it
// (s is valid UTF-8: permission.Pattern escapes any other byte).
func jsonString(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // <, > and & as they are
	_ = e.Encode(s)        // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// projectRules reads workspaces' rule files, again when they change.
type projectRules struct {
	mu    sync.Mutex
	cache map[string]projectEntry
}

type projectEntry struct {
	mod   int64
	rules []permission.Rule
}

func newProjectRules() *projectRules { return &projectRules{cache: map[string]projectEntry{}} }

// rules are workspace's rules; a file that cannot be read or parsed
// becomes a rule that asks about everything, so that a broken file never
// widens what runs.
func (p *projectRules) rules(workspace string) []permission.Rule {
	path := filepath.Join(workspace, ProjectRulesFile)
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.cache[path]; ok && e.mod == fi.ModTime().UnixNano() {
		return e.rules
	}
	rules, err := readProjectRules(path)
	if err != nil {
		r, _ := permission.NewRule(permission.Ask, "*", fmt.Sprintf("%s is broken: %v", path, err))
		rules = []permission.Rule{r}
	}
	p.cache[path] = projectEntry{mod: fi.ModTime().UnixNano(), rules: rules}
	return rules
}

// readProjectRules reads a workspace's rule file: allow, ask and deny.
func readProjectRules(path string) ([]permission.Rule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c struct{ Allow, Ask, Deny []string }
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return nil, err
	}
	var out []permission.Rule
	for _, s := range []RuleSet{{path, permission.Allow, c.Allow}, {path, permission.Ask, c.Ask}, {path, permission.Deny, c.Deny}} {
		rules, err := s.rules()
		if err != nil {
			return nil, err
		}
		out = append(out, rules...)
	}
	return out, nil
}
