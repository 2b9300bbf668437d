package setup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/bash/remote/k8s"
	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/toolbash"
)

// Sandbox shapes the sandbox.
type Sandbox struct {
	// Mode is auto ("" too: a jail where it works, else the Landlock
	// layer, else none, with a warning), on (a jail or the Landlock layer,
	// or an error), jail or landlock (that layer, or an error), or off.
	Mode string
	// Network is the jails' network; with sandbox.NetworkAllowlist, only
	// through a proxy that lets the hosts of AllowDomains through (and
	// the default developer hosts, egress.DefaultAllow, unless
	// NoDefaultDomains) but those of DenyDomains.
	Network                   sandbox.Network
	AllowDomains, DenyDomains []string
	NoDefaultDomains          bool
	// LockCaches, Writable, ReadOnly and Hidden are the sandbox.Policy's
	// (absolute paths).
	LockCaches                 bool
	Writable, ReadOnly, Hidden []string
	// Limits are each session's.
	Limits sandbox.Limits
	// NoEscape never lets a model's call ask the user to run outside the
	// sandbox.
	NoEscape bool
	// Agent is the binary each jail starts as its agent
	// (sandbox.Options.Agent): one that calls sandbox.Main first thing.
	// Empty: this program.
	Agent string
	// Warm is how many started jails (Landlock-layer agents in that
	// layer) to keep ready for new sessions (sandbox.Options.Warm).
	Warm int
}

// UnsandboxedWarning is what the user and the model are told when
// commands run without a sandbox in the auto mode.
const UnsandboxedWarning = "commands are NOT sandboxed: they run with this process's full authority"

// LandlockLacks is what the Landlock layer does not give, as users read
// it.
const LandlockLacks = "commands see the host's processes and network, have no /tmp of their own (their TMPDIR is the session's), and may change .git and editor files in the workspace"

// sandboxModes are the modes that sandbox, and their layers: auto and on
// take the strongest that works.
var sandboxModes = map[string]sandbox.Layer{"auto": sandbox.LayerAuto, "on": sandbox.LayerAuto,
	"jail": sandbox.LayerJail, "landlock": sandbox.LayerLandlock}

// sandboxExecutor makes the sandbox executor or the local one, as the
// mode says.
func (s *Setup) sandboxExecutor(ctx context.Context, stderr io.Writer) (bash.Executor, error) {
	sb, mode := &s.cfg.Sandbox, s.Mode()
	layer, ok := sandboxModes[mode]
	switch {
	case mode == "off":
		return local.New(s.cfg.Local)
	case !ok:
		return nil, configErr(fmt.Errorf("--sandbox must be auto, on, jail, landlock or off (got %q)", mode))
	}
	so := &sandbox.Options{Local: s.cfg.Local, Limits: sb.Limits, Layer: layer, AllowUnsandboxed: !sb.NoEscape, Agent: sb.Agent,
		Policy: sandbox.Policy{Network: sb.Network, LockCaches: sb.LockCaches, Writable: sb.Writable, ReadOnly: sb.ReadOnly, Hidden: sb.Hidden},
		Warm:   sb.Warm, Observe: s.observe,
		Logf: func(format string, a ...any) {
			fmt.Fprintf(cmp.Or[io.Writer](stderr, io.Discard), "dsh-bash: sandbox: "+format+"\n", a...)
		}}
	if sb.Network == sandbox.NetworkAllowlist {
		var err error
		if so.Policy.Forward, err = s.jailForwards(); err != nil {
			return nil, err
		}
		if so.Egress, err = s.makeProxy(); err != nil {
			return nil, err
		}
	}
	se, err := sandbox.New(ctx, so)
	if err == nil {
		s.adopt(se)
		return se, nil
	}
	s.closeProxy()
	if mode != "auto" || !errors.Is(err, sandbox.ErrUnavailable) || sb.Network == sandbox.NetworkAllowlist {
		// An allowlist asked for is not given up for no sandbox at all,
		// whose network is the host's.
		return nil, err
	}
	s.reason = err.Error()
	s.warn("WARNING: %s (%v; --sandbox=off silences this, --sandbox=on refuses to start)", UnsandboxedWarning, err)
	return local.New(s.cfg.Local)
}

// adopt takes se for the executor, and what it reports about itself for
// the facts.
func (s *Setup) adopt(se *sandbox.Executor) {
	s.se = se
	var why error
	s.layer, why = se.Layer()
	v := se.View(StartWorkspace(s.cfg.Local), os.Environ())
	s.network = v.Network
	if s.layer == sandbox.LayerLandlock {
		s.landlockNotes(why, v)
	} else {
		s.tmp = se.Limits().Tmp // the Landlock layer has no /tmp of its own
	}
}

// landlockNotes warn that the sandbox is the Landlock layer (and why,
// where there could be no jail), and which paths it cannot hide or keep
// read-only in v, the view of the start's workspace: those within a
// writable path.
func (s *Setup) landlockNotes(why error, v sandbox.View) {
	if why != nil {
		s.warn("the sandbox is the Landlock layer, without a jail (%v): %s", why, LandlockLacks)
	}
	if len(v.NotReadOnly) > 0 {
		s.warn("WARNING: the Landlock layer cannot keep --sandbox-read-only paths within writable ones read-only: %s", strings.Join(v.NotReadOnly, ", "))
	}
	if len(v.NotHidden) > 0 {
		s.warn("WARNING: the Landlock layer cannot hide paths within writable ones (the workspace, the caches, --sandbox-writable); commands can read and change: %s", strings.Join(v.NotHidden, ", "))
	}
}

func (s *Setup) warn(format string, a ...any) {
	s.warnings = append(s.warnings, fmt.Sprintf(format, a...))
}

// StartWorkspace is the workspace sessions get unless their client names
// one: opts.Cwd, else the current directory.
func StartWorkspace(opts *local.Options) string {
	if opts != nil && opts.Cwd != "" {
		return opts.Cwd
	}
	wd, _ := os.Getwd()
	return wd
}

// OffersEscape reports whether a model's call may ask to run outside the
// sandbox: there is one, and the configuration did not turn the question
// off.
func (s *Setup) OffersEscape() bool { return s.se != nil && !s.cfg.Sandbox.NoEscape }

// OnNetwork reports whether commands run jailed with the host's network.
// With the allowlist, only where an allow rule names an address.
func (s *Setup) OnNetwork() bool {
	return s.se != nil && (s.network == sandbox.NetworkOn ||
		s.network == sandbox.NetworkAllowlist && egress.NamesAddresses(s.cfg.Sandbox.AllowDomains))
}

// Facts are what the sandbox lets commands do, for the model (the tools'
// Options.Sandbox), as the executor built reports its layer, limits and
// network; nil where commands are not sandboxed here. They say that the
// front end asks its user about hosts the allowlist does not list, as
// mcpserver and acpagent do.
func (s *Setup) Facts() *toolbash.SandboxFacts {
	if s.se == nil {
		return nil
	}
	sb := &s.cfg.Sandbox
	facts := &toolbash.SandboxFacts{NetworkOff: s.network == sandbox.NetworkOff, LockCaches: sb.LockCaches,
		Writable: sb.Writable, ReadOnly: sb.ReadOnly, Landlock: s.layer == sandbox.LayerLandlock,
		Unsandboxed: s.OffersEscape()}
	if s.tmp > 0 {
		facts.TmpSize = sandbox.ByteSize(s.tmp)
	}
	if s.network == sandbox.NetworkAllowlist {
		allow, _ := s.AllowlistRules()
		facts.Allowlist = append([]string{}, s.notForwarded(allow)...) // not nil: the mode
		facts.Forwarded = s.Forwarded()
		facts.AsksNetwork = true
	}
	return facts
}

// Instructions are the model's instructions (an MCP server's): where
// commands run, what the sandbox allows, or a warning when commands are
// not sandboxed. Where the client cannot be asked (canAsk false), they
// do not offer a call outside the sandbox.
func (s *Setup) Instructions(canAsk bool) string {
	text := s.whereText(canAsk)
	if len(s.cfg.Permissions.DenyPatterns()) > 0 {
		text = strings.TrimSpace(text + "\n\n" + toolbash.ExecDenyText)
	}
	return text
}

// whereText says where commands run and how they are held.
func (s *Setup) whereText(canAsk bool) string {
	switch re := s.exec.(type) {
	case *remote.Executor:
		h := re.Hello()
		msg := fmt.Sprintf("Commands run on %s (%s), not on the client's machine: paths are that machine's.", h.Host, h.Containment)
		if h.Containment != "sandbox" {
			msg += " Warning: they are NOT sandboxed there."
		}
		return msg
	case *k8s.Executor:
		return toolbash.PodText(re.Namespace())
	case *remote.Fleet:
		return fmt.Sprintf("Commands run on one of %d remote hosts (each session stays on its host), not on the client's machine: paths are that host's. Warning: they may NOT be sandboxed there (each host's dsh-bash executor decides).", len(re.Hosts()))
	}
	switch {
	case s.se != nil:
		facts := s.Facts()
		facts.Unsandboxed = facts.Unsandboxed && canAsk
		return toolbash.SandboxText(*facts)
	case s.Mode() == "off":
		return ""
	case s.reason != "":
		return "Warning: " + UnsandboxedWarning + " (" + s.reason + ")."
	}
	return "Warning: " + UnsandboxedWarning + "."
}

// Containment names how exec holds commands, as a remote handshake says
// it.
func Containment(exec bash.Executor) string {
	switch e := exec.(type) {
	case *sandbox.Executor:
		return "sandbox"
	case *local.Executor:
		return e.Containment().String()
	case *remote.Executor:
		return "remote: " + e.Hello().Containment
	case *k8s.Executor:
		return "kubernetes: a pod per session"
	}
	return "unknown"
}
