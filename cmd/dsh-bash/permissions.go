package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/setup"
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
	// it: "allow" or "ask" (empty: the front end's, see setup.Permissions.Unmatched).
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

// config is the permission gate's configuration: the file's rules, then
// the flags'.
func (f *permissionFlags) config() setup.Permissions {
	src := f.configPath
	c := setup.Permissions{ConfigPath: f.configPath, ProjectRules: f.file.ProjectRules,
		NoReadOnly: f.file.Defaults != nil && !*f.file.Defaults,
		Rules: []setup.RuleSet{{Source: src, Decision: permission.Allow, Patterns: f.file.Allow},
			{Source: src, Decision: permission.Ask, Patterns: f.file.Ask}, {Source: src, Decision: permission.Deny, Patterns: f.file.Deny},
			{Source: "--allow", Decision: permission.Allow, Patterns: f.allow}, {Source: "--ask", Decision: permission.Ask, Patterns: f.ask},
			{Source: "--deny", Decision: permission.Deny, Patterns: f.deny}}}
	switch {
	case f.unmatched != "":
		c.Default, c.DefaultSource = string(f.unmatched), "--default"
	case f.file.Default != "":
		c.Default, c.DefaultSource = f.file.Default, `"default" in `+f.configPath
	}
	return c
}

// describePermissions writes the doctor's report on the permission
// settings: the rules, and what a command no rule matches does.
func describePermissions(w io.Writer, f *permissionFlags) {
	if c := f.config(); !c.Configured() {
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
		defaults, setup.ProjectRulesFile, project)
	fmt.Fprintf(w, "unmatched commands: %s\n", f.unmatchedText())
	fmt.Fprintln(w, "commands that cannot be known statically: asked about, whatever the default (a command named by a variable, eval of a variable, a write outside the workspace, …)")
	if c := f.config(); len(c.DenyPatterns()) > 0 {
		fmt.Fprintln(w, "deny rules: enforced where programs start as well, at every exec of every command (traced with ptrace); a workspace's own are not")
	}
}

// unmatchedText says what a command no rule matches does, and what set
// it.
func (f *permissionFlags) unmatchedText() string {
	verb := map[permission.Decision]string{permission.Allow: "run", permission.Ask: "asked about"}
	c := f.config()
	if d, src := c.Unmatched(""); src != "" {
		return fmt.Sprintf("%s (%s)", verb[d], src)
	}
	return "run under mcp and run, asked about under acp (each front end's default; set one with --default allow|ask, or \"default\" in \"permissions\")"
}
