package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/toolbash"
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
	active     bool   // set once the executor is made: commands run jailed
	reason     string // why auto ran without the sandbox
	tmpSize    int64  // the size of each jail's /tmp, once active
	layer      sandbox.Layer
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

// unsandboxedWarning is said on stderr, and in the MCP server's
// instructions, when commands run without a sandbox under --sandbox=auto.
const unsandboxedWarning = "commands are NOT sandboxed: they run with this process's full authority"

// sandboxModes are the --sandbox modes that sandbox, and their layers:
// auto and on take the strongest that works.
var sandboxModes = map[string]sandbox.Layer{"auto": sandbox.LayerAuto, "on": sandbox.LayerAuto,
	"jail": sandbox.LayerJail, "landlock": sandbox.LayerLandlock}

// landlockLacks is what the Landlock layer does not give, as users read it.
const landlockLacks = "commands see the host's processes and network, have no /tmp of their own (their TMPDIR is the session's), and may change .git and editor files in the workspace"

// executor makes the sandbox executor or the local one, as the flags say.
func (f *sandboxFlags) executor(ctx context.Context, name string, opts *local.Options, stderr io.Writer) (bash.Executor, error) {
	policy, err := f.policy()
	if err != nil {
		return nil, err
	}
	layer, ok := sandboxModes[f.mode]
	switch {
	case f.mode == "off":
		return local.New(opts)
	case !ok:
		return nil, usageErr(fmt.Errorf("--sandbox must be auto, on, jail, landlock or off (got %q)", f.mode))
	}
	limits, err := f.limits()
	if err != nil {
		return nil, err
	}
	so := &sandbox.Options{Local: opts, Policy: policy, Limits: limits, Layer: layer, AllowUnsandboxed: f.escape == "ask"}
	if policy.Network == sandbox.NetworkAllowlist {
		if so.Policy.Forward, err = f.net.jailForwards(); err != nil {
			return nil, err
		}
		if so.Egress, err = f.net.makeProxy(); err != nil {
			return nil, err
		}
	}
	se, err := sandbox.New(ctx, so)
	if err == nil {
		f.active = true
		var why error
		if f.layer, why = se.Layer(); f.layer == sandbox.LayerLandlock {
			f.landlockNotes(name, why, se.View(startWorkspace(opts), os.Environ()), stderr)
		} else {
			f.tmpSize = se.Limits().Tmp // the Landlock layer has no /tmp of its own
		}
		return se, nil
	}
	f.net.close()
	if f.mode != "auto" || !errors.Is(err, sandbox.ErrUnavailable) || policy.Network == sandbox.NetworkAllowlist {
		// An allowlist asked for is not given up for no sandbox at all,
		// whose network is the host's.
		return nil, err
	}
	f.reason = err.Error()
	fmt.Fprintf(stderr, "dsh-bash %s: WARNING: %s (%v; --sandbox=off silences this, --sandbox=on refuses to start)\n", name, unsandboxedWarning, err)
	return local.New(opts)
}

// landlockNotes say on stderr that the sandbox is the Landlock layer (and
// why, where there could be no jail), and which paths it cannot hide or
// keep read-only in v, the view of the start's workspace: those within a
// writable path.
func (f *sandboxFlags) landlockNotes(name string, why error, v sandbox.View, stderr io.Writer) {
	if why != nil {
		fmt.Fprintf(stderr, "dsh-bash %s: the sandbox is the Landlock layer, without a jail (%v): %s\n", name, why, landlockLacks)
	}
	if len(v.NotReadOnly) > 0 {
		fmt.Fprintf(stderr, "dsh-bash %s: WARNING: the Landlock layer cannot keep --sandbox-read-only paths within writable ones read-only: %s\n", name, strings.Join(v.NotReadOnly, ", "))
	}
	if len(v.NotHidden) > 0 {
		fmt.Fprintf(stderr, "dsh-bash %s: WARNING: the Landlock layer cannot hide paths within writable ones (the workspace, the caches, --sandbox-writable); commands can read and change: %s\n", name, strings.Join(v.NotHidden, ", "))
	}
}

// startWorkspace is the workspace sessions get unless their client names
// one: --cwd, else the current directory.
func startWorkspace(opts *local.Options) string {
	if opts.Cwd != "" {
		return opts.Cwd
	}
	wd, _ := os.Getwd()
	return wd
}

func (f *sandboxFlags) policy() (sandbox.Policy, error) {
	p := sandbox.Policy{LockCaches: f.lockCaches, Writable: f.writable, ReadOnly: f.readOnly, Hidden: f.hidden}
	switch f.network {
	case "on":
	case "off":
		p.Network = sandbox.NetworkOff
	case "allowlist":
		p.Network = sandbox.NetworkAllowlist
	default:
		return p, usageErr(fmt.Errorf("--sandbox-network must be on, off or allowlist (got %q)", f.network))
	}
	return p, nil
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

// offersEscape reports whether a model's call may ask to run outside the
// sandbox: there is one, and the user did not turn the question off.
func (f *sandboxFlags) offersEscape() bool { return f.active && f.escape == "ask" }

// onNetwork reports whether commands run jailed with the host's network.
// With the allowlist, only where an allow rule names an address.
func (f *sandboxFlags) onNetwork() bool {
	return f.active && (f.network == "on" || f.network == "allowlist" && f.net.reachesLocal())
}

// facts are what the sandbox lets commands do, for the model; nil where
// commands are not sandboxed here.
func (f *sandboxFlags) facts() *toolbash.SandboxFacts {
	if !f.active {
		return nil
	}
	facts := &toolbash.SandboxFacts{NetworkOff: f.network == "off", LockCaches: f.lockCaches,
		Writable: f.writable, ReadOnly: f.readOnly, Landlock: f.layer == sandbox.LayerLandlock,
		Unsandboxed: f.offersEscape()}
	if f.tmpSize > 0 {
		facts.TmpSize = sandbox.ByteSize(f.tmpSize)
	}
	if f.network == "allowlist" {
		allow, _ := f.net.rules()
		facts.Allowlist = append([]string{}, f.net.notForwarded(allow)...) // not nil: the mode
		facts.Forwarded = f.net.forwarded()
		facts.AsksNetwork = f.net.asks
	}
	return facts
}

// instructions are the MCP server's instructions: what the sandbox
// allows, or a warning when commands are not sandboxed. Where the client
// cannot be asked, they do not offer a call outside the sandbox.
func (f *sandboxFlags) instructions(canAsk bool) string {
	switch {
	case f.active:
		facts := f.facts()
		facts.Unsandboxed = facts.Unsandboxed && canAsk
		return toolbash.SandboxText(*facts)
	case f.mode == "off":
		return ""
	}
	if f.reason != "" {
		return "Warning: " + unsandboxedWarning + " (" + f.reason + ")."
	}
	return "Warning: " + unsandboxedWarning + "."
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
