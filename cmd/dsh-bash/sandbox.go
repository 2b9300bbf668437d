package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/setup"
)

// sandboxFlags choose and shape the sandbox.
type sandboxFlags struct {
	mode       string // auto, on, off
	network    string // on, off, allowlist
	net        netFlags
	lockCaches bool
	writable   listFlag
	readOnly   listFlag
	hidden     listFlag
	memory     string // a size ("2G"), "off", or "" for the default
	pids       int    // 0 default, -1 none
	tmp        string // a size ("1G"), or "" for the default
	escape     string // ask, off: may a call ask to run outside the sandbox
	warm       int    // jails kept started for new sessions
	fs         *flag.FlagSet
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.mode, "sandbox", "", "sandbox each session's commands: auto (a jail where it works, else the Landlock layer, else none with a warning), on (a jail or the Landlock layer, or refuse to start), jail or landlock (that layer, or refuse to start), off; default $DSH_BASH_SANDBOX, else the config file's sandbox.mode, else auto")
	fs.StringVar(&f.network, "sandbox-network", "on", "network inside the jails: on, off (loopback only), or allowlist (only through a proxy that lets the listed hosts through and asks about others)")
	fs.Var(&f.net.allow, "allow-domain", "with --sandbox-network=allowlist, a host commands may reach: example.com, *.example.com (its subdomains), or an address or range (10.0.0.0/8), the only way to allow a local one, each with a port or not (db.example:5432); a service on the host's loopback with its port (127.0.0.1:5432, localhost:8080, [::1]:6379) is forwarded to the same address in each jail, for any client (repeatable)")
	fs.Var(&f.net.deny, "deny-domain", "with --sandbox-network=allowlist, a host commands may never reach, as --allow-domain; a deny wins (repeatable)")
	fs.BoolVar(&f.net.defaults, "default-domains", true, "with --sandbox-network=allowlist, allow the package registries and source hosts a developer needs (the Go module proxy, npm, PyPI, crates.io, GitHub, …: dsh-bash doctor lists them) besides --allow-domain")
	fs.BoolVar(&f.lockCaches, "sandbox-lock-caches", false, "make the tool caches in the home directory (~/.cache, ~/go, ~/.npm, …) read-only too")
	fs.Var(&f.writable, "sandbox-writable", "another path commands may change (repeatable)")
	fs.Var(&f.readOnly, "sandbox-read-only", "a path that stays read-only even inside a writable one (repeatable)")
	fs.Var(&f.hidden, "sandbox-hide", "a path commands cannot see (repeatable)")
	fs.StringVar(&f.memory, "sandbox-memory", "", "most memory one session's commands may use together: a size (512M, 2G) or off (default: a quarter of the machine's)")
	fs.IntVar(&f.pids, "sandbox-pids", 0, "most processes one session may have at once; -1 no limit (default 4096)")
	fs.StringVar(&f.escape, "sandbox-escape", "ask", "ask: a model's call may ask the user to run that one call outside the sandbox (the bash argument unsandboxed, asked by ACP request_permission or MCP elicitation), off: never (the argument is not offered)")
	fs.IntVar(&f.warm, "sandbox-warm", 0, "keep `N` started jails ready (Landlock-layer agents in that layer), so that a new session's first call waits for no jail to start; each is bound to the session that claims it and ends with it (a pool of jails needs root; docs/operations.md)")
	fs.StringVar(&f.tmp, "sandbox-tmp", "", "the size of each session's private /tmp, kept in memory: a size (256M, 1G) (default: half of --sandbox-memory)")
}

// merge completes the parsed flags with the environment and the
// configuration file: a flag given wins, then $DSH_BASH_SANDBOX (for the
// mode), then the file; the file's path lists come before the flags'.
func (f *sandboxFlags) merge(c *sandboxConfig) error {
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if !given["sandbox"] {
		f.mode = cmp.Or(os.Getenv("DSH_BASH_SANDBOX"), c.Mode, "auto")
	}
	if !given["sandbox-network"] && c.Network != "" {
		f.network = c.Network
	}
	f.net.allow = append(slices.Clip(c.AllowDomains), f.net.allow...)
	f.net.deny = append(slices.Clip(c.DenyDomains), f.net.deny...)
	if !given["default-domains"] && c.DefaultDomains != nil {
		f.net.defaults = *c.DefaultDomains
	}
	f.lockCaches = f.lockCaches || c.LockCaches
	if !given["sandbox-memory"] && c.Memory != "" {
		f.memory = c.Memory
	}
	if !given["sandbox-pids"] && c.Pids != 0 {
		f.pids = c.Pids
	}
	if !given["sandbox-tmp"] && c.Tmp != "" {
		f.tmp = c.Tmp
	}
	if !given["sandbox-warm"] && c.Warm != 0 {
		f.warm = c.Warm
	}
	if !given["sandbox-escape"] && c.Escape != "" {
		f.escape = c.Escape
	}
	if f.escape != "ask" && f.escape != "off" {
		return usageErr(fmt.Errorf("--sandbox-escape must be ask or off (got %q)", f.escape))
	}
	for _, l := range []struct {
		flag *listFlag
		file []string
	}{{&f.writable, c.Writable}, {&f.readOnly, c.ReadOnly}, {&f.hidden, c.Hidden}} {
		given, err := absPaths(*l.flag)
		if err != nil {
			return err
		}
		*l.flag = append(slices.Clip(l.file), given...)
	}
	return nil
}

// absPaths expands ~ in the paths given by flag and makes relative ones
// absolute (relative to the working directory).
func absPaths(paths []string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		if !strings.HasPrefix(p, "~") {
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, err
			}
			p = abs
		}
		abs, err := expandPath(p)
		if err != nil {
			return nil, err
		}
		out[i] = abs
	}
	return out, nil
}

// given reports whether a sandbox flag (the allowlist's too) was given on
// the command line.
func (f *sandboxFlags) given() bool {
	given := false
	f.fs.Visit(func(fl *flag.Flag) {
		given = given || strings.HasPrefix(fl.Name, "sandbox") || strings.HasSuffix(fl.Name, "-domain") || fl.Name == "default-domains"
	})
	return given
}

// config is the sandbox's configuration the flags give, or a usage error
// naming the flag of a value it cannot take.
func (f *sandboxFlags) config() (setup.Sandbox, error) {
	c := setup.Sandbox{Mode: f.mode, LockCaches: f.lockCaches, Writable: f.writable, ReadOnly: f.readOnly, Hidden: f.hidden,
		AllowDomains: f.net.allow, DenyDomains: f.net.deny, NoDefaultDomains: !f.net.defaults, NoEscape: f.escape != "ask",
		Agent: os.Getenv("DSH_BASH_AGENT")}
	var err error
	if c.Network, err = f.policy(); err != nil {
		return c, err
	}
	if f.mode == "off" {
		return c, nil // the limits of no sandbox are not read
	}
	if _, ok := sandboxModes[f.mode]; !ok {
		return c, usageErr(fmt.Errorf("--sandbox must be auto, on, jail, landlock or off (got %q)", f.mode))
	}
	if f.warm < 0 {
		return c, usageErr(fmt.Errorf("--sandbox-warm must not be negative (got %d)", f.warm))
	}
	c.Warm = f.warm
	c.Limits, err = f.limits()
	return c, err
}

// sandboxModes are the values of --sandbox but off.
var sandboxModes = map[string]bool{"auto": true, "on": true, "jail": true, "landlock": true}

// policy is the jails' network --sandbox-network gives.
func (f *sandboxFlags) policy() (sandbox.Network, error) {
	switch f.network {
	case "on":
		return sandbox.NetworkOn, nil
	case "off":
		return sandbox.NetworkOff, nil
	case "allowlist":
		return sandbox.NetworkAllowlist, nil
	}
	return 0, usageErr(fmt.Errorf("--sandbox-network must be on, off or allowlist (got %q)", f.network))
}

// limits are the sessions' limits the flags give.
func (f *sandboxFlags) limits() (sandbox.Limits, error) {
	l := sandbox.Limits{Pids: f.pids}
	if f.pids < -1 {
		return l, usageErr(fmt.Errorf("--sandbox-pids must be positive, or -1 for no limit (got %d)", f.pids))
	}
	switch f.memory {
	case "":
	case "off":
		l.Memory = -1
	default:
		n, err := parseSize(f.memory)
		if err != nil {
			return l, usageErr(fmt.Errorf("--sandbox-memory: %w", err))
		}
		l.Memory = n
	}
	if f.tmp != "" {
		n, err := parseSize(f.tmp)
		if err != nil {
			return l, usageErr(fmt.Errorf("--sandbox-tmp: %w", err))
		}
		l.Tmp = n
	}
	return l, nil
}

// parseSize reads a size in bytes with an optional K, M or G suffix (powers
// of 1024); at least 16 MiB, below which a shell hardly starts.
func parseSize(size string) (int64, error) {
	s, mult := size, int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size: give bytes or a number with K, M or G (2G)", size)
	}
	if n*mult < 16<<20 {
		return 0, fmt.Errorf("%s is below 16M", size)
	}
	return n * mult, nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// netFlags are the network allowlist's (--sandbox-network=allowlist).
type netFlags struct {
	allow, deny listFlag
	defaults    bool // the default developer allowlist (egress.DefaultAllow) too
}
