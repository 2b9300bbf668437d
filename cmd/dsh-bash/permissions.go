package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/toolbash"
)

// permissionConfig is the configuration file's "permissions" object.
type permissionConfig struct {
	Allow []string `json:"allow"`
	Ask   []string `json:"ask"`
	Deny  []string `json:"deny"`
	// Defaults, false, leaves out the built-in rules (the commands known
	// to only read, allowed: see permission.Policy.ReadOnly).
	Defaults *bool `json:"defaults"`
	// ProjectRules reads a workspace's .dsh/permissions.json (allow, ask,
	// deny): a repository cannot allow itself unless the user says so.
	ProjectRules bool `json:"projectRules"`
	// Default is what a command no rule matches does, as --default gives
	// it: "allow" or "ask" (empty: the front end's, see unmatchedDefault).
	Default string `json:"default"`
}

// check refuses a value no flag would take, naming its line in b.
func (c *permissionConfig) check(b []byte) error {
	if c.Default != "" && !validDefault(c.Default) {
		return fmt.Errorf("line %d: permissions.default must be allow or ask (got %q)", keyLine(b, "default"), c.Default)
	}
	return nil
}

// validDefault reports whether s is a value of --default.
func validDefault(s string) bool { return s == "allow" || s == "ask" }

// defaultFlag is --default: allow or ask; empty when not given.
type defaultFlag string

func (f *defaultFlag) String() string { return string(*f) }

func (f *defaultFlag) Set(s string) error {
	if !validDefault(s) {
		return errors.New("must be allow or ask")
	}
	*f = defaultFlag(s)
	return nil
}

// unmatchedDefault is what a command no rule matches does under a front
// end where neither --default nor the configuration file says: over MCP
// it runs, as the client asks its user before each call it was not told
// to allow (and run's user typed the command); the ACP agent is the one
// that asks.
func unmatchedDefault(front string) permission.Decision {
	if front == "acp" {
		return permission.Ask
	}
	return permission.Allow
}

// projectRulesFile is where a workspace keeps its rules.
const projectRulesFile = ".dsh/permissions.json"

// permissionFlags give rules on the command line.
type permissionFlags struct {
	allow, ask, deny listFlag
	unmatched        defaultFlag
	file             permissionConfig
	configPath       string
}

func (f *permissionFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.allow, "allow", "a command prefix to run without asking, e.g. 'npm run *' (repeatable)")
	fs.Var(&f.ask, "ask", "a command prefix to ask about (repeatable)")
	fs.Var(&f.deny, "deny", "a command prefix never to run, e.g. 'git push --force' (repeatable)")
	fs.Var(&f.unmatched, "default", "what a command no rule matches does, `allow` or ask (default: allow under mcp and run, where the MCP client or the user gates each call; ask under acp)")
}

// configured reports whether commands are checked at all: once a rule or
// a default is configured.
func (f *permissionFlags) configured() bool {
	return len(f.allow)+len(f.ask)+len(f.deny)+len(f.file.Allow)+len(f.file.Ask)+len(f.file.Deny) > 0 ||
		f.unmatched != "" || f.file.Default != ""
}

// unmatchedFor is what a command no rule matches does under front, and
// what set it ("" for the front end's default).
func (f *permissionFlags) unmatchedFor(front string) (permission.Decision, string) {
	switch {
	case f.unmatched != "":
		d, _ := permission.ParseDecision(string(f.unmatched))
		return d, "--default"
	case f.file.Default != "":
		d, _ := permission.ParseDecision(f.file.Default)
		return d, `"default" in ` + f.configPath
	}
	return unmatchedDefault(front), ""
}

// options are the gate's options under front (mcp, acp or run), or nil
// when neither a rule nor a default is configured (nothing is checked:
// every command runs, or, under acp, every call is asked about).
func (f *permissionFlags) options(front string) (*toolbash.GateOptions, error) {
	if !f.configured() {
		return nil, nil
	}
	p := &permission.Policy{}
	p.Unmatched, _ = f.unmatchedFor(front)
	p.Home, _ = os.UserHomeDir()
	// The built-in rules: the commands the permission package's tables
	// know to only read.
	p.ReadOnly = f.file.Defaults == nil || *f.file.Defaults
	src := f.configPath
	sets := append([]ruleSet(nil), ruleSet{src, permission.Allow, f.file.Allow}, ruleSet{src, permission.Ask, f.file.Ask}, ruleSet{src, permission.Deny, f.file.Deny},
		ruleSet{"--allow", permission.Allow, f.allow}, ruleSet{"--ask", permission.Ask, f.ask}, ruleSet{"--deny", permission.Deny, f.deny})
	for _, s := range sets {
		rules, err := s.rules()
		if err != nil {
			return nil, err
		}
		p.Rules = append(p.Rules, rules...)
	}
	file := cmp.Or(f.configPath, "the configuration file")
	o := &toolbash.GateOptions{Policy: p, HowToAllow: func(prefix string) string { return howToAllow(prefix, file) }}
	if f.file.ProjectRules {
		o.Project = newProjectRules().rules
	}
	return o, nil
}

// describePermissions writes the doctor's report on the permission
// settings: the rules, and what a command no rule matches does.
func describePermissions(w io.Writer, f *permissionFlags) {
	if !f.configured() {
		fmt.Fprintln(w, "permissions: no rules, nothing checked: under mcp and run every command runs (an MCP client asks its user before each call it was not told to allow); under acp every call is asked about")
		return
	}
	project := "not read"
	if f.file.ProjectRules {
		project = "read"
	}
	defaults := "off"
	if f.file.Defaults == nil || *f.file.Defaults {
		defaults = "on"
	}
	fmt.Fprintf(w, "permissions: %d allow, %d ask and %d deny rules; the built-in read-only rules %s; a workspace's %s %s\n",
		len(f.allow)+len(f.file.Allow), len(f.ask)+len(f.file.Ask), len(f.deny)+len(f.file.Deny),
		defaults, projectRulesFile, project)
	fmt.Fprintf(w, "unmatched commands: %s\n", f.unmatchedText())
	fmt.Fprintln(w, "commands that cannot be known statically: asked about, whatever the default (a command named by a variable, eval of a variable, a write outside the workspace, …)")
}

// unmatchedText says what a command no rule matches does, and what set
// it.
func (f *permissionFlags) unmatchedText() string {
	verb := map[permission.Decision]string{permission.Allow: "run", permission.Ask: "asked about"}
	if d, src := f.unmatchedFor(""); src != "" {
		return fmt.Sprintf("%s (%s)", verb[d], src)
	}
	return "run under mcp and run, asked about under acp (each front end's default; set one with --default allow|ask, or \"default\" in \"permissions\")"
}

// ruleSet is patterns of one decision from one source.
type ruleSet struct {
	source   string
	decision permission.Decision
	patterns []string
}

func (s ruleSet) rules() ([]permission.Rule, error) {
	return permission.NewRules(s.decision, s.source, s.patterns...)
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
	path := filepath.Join(workspace, projectRulesFile)
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
	for _, s := range []ruleSet{{path, permission.Allow, c.Allow}, {path, permission.Ask, c.Ask}, {path, permission.Deny, c.Deny}} {
		rules, err := s.rules()
		if err != nil {
			return nil, err
		}
		out = append(out, rules...)
	}
	return out, nil
}
