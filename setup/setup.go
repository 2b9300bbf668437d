// Package setup builds what dsh-bash serves from a configuration: the
// executor (remote, sandboxed or local, with the fallback of the sandbox's
// auto mode), the facts of the sandbox as the executor it built reports
// them, the network allowlist's proxy, the permission gate's options of
// each front end (with a workspace's own rules), the instructions for the
// model, and the warnings for the user.
//
// An embedder that hands what New returns to mcpserver.New or
// acpagent.New gets exactly what dsh-bash mcp or dsh-bash acp serves;
// the binary itself only parses flags and its configuration file into a
// Config.
package setup

import (
	"cmp"
	"context"
	"errors"
	"io"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/observe"
)

// Config is what to build. The zero Config is a local executor with
// default options in the sandbox's auto mode (a jail, else the Landlock
// layer, else no sandbox with a warning), no permission rules.
type Config struct {
	// Local are the local executor's options, inside the sandbox or
	// without one (nil: defaults). Local.Cwd is the workspace of sessions
	// whose client names none ("": the current directory).
	Local *local.Options
	// Sandbox shapes the sandbox; it applies where commands run, so it
	// must be left in the auto or off mode with Remote.
	Sandbox Sandbox
	// Remote, with a host, runs commands on the far side instead.
	Remote Remote
	// Permissions are the permission gate's rules.
	Permissions Permissions
}

// Options are how New builds; nil means the defaults.
type Options struct {
	// Stderr receives the far sides' stderr (an --executor-cmd program's,
	// an SSH host's) and what the sandbox's warm pool reports; nil
	// discards it.
	Stderr io.Writer
	// Observe, if set, is told what what New builds does, for the
	// operators (package observe): the network allowlist's decisions,
	// the sandbox's jail starts and warm claims.
	// Hand the same sink to the front end (mcpserver.Options.Observe,
	// acpagent.Options.Observe).
	Observe observe.Sink
}

// Setup is what New built. Close it when done.
type Setup struct {
	cfg      Config
	exec     bash.Executor
	se       *sandbox.Executor // the sandbox, when commands run in one
	proxy    *egress.Proxy
	forwards []egress.Forward // the host's services the jails have
	layer    sandbox.Layer    // as se reports them
	network  sandbox.Network
	tmp      int64
	reason   string // why the auto mode runs without the sandbox
	warnings []string
	hosts    []string
	observe  observe.Sink // Options.Observe
}

// ConfigError is an error in the configuration (a value no setting takes,
// settings that contradict each other), as opposed to one of the machine
// or the network.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// configErr wraps err in a *ConfigError.
func configErr(err error) error { return &ConfigError{err} }

// New builds the executor cfg describes: remote hosts (a fleet when more
// than one), else the sandbox or the local executor as Sandbox.Mode says.
// Errors in cfg are *ConfigError.
func New(ctx context.Context, cfg *Config, opts *Options) (*Setup, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if opts == nil {
		opts = &Options{}
	}
	s := &Setup{cfg: *cfg, observe: opts.Observe}
	if s.cfg.Local == nil {
		s.cfg.Local = &local.Options{}
	}
	if s.cfg.Local.ExecRules == nil {
		rules, err := s.cfg.Permissions.execRules()
		if err != nil {
			return nil, err
		}
		local := *s.cfg.Local // the caller's stays as it was
		local.ExecRules = rules
		s.cfg.Local = &local
	}
	var err error
	if s.cfg.Remote.active() {
		if mode := s.Mode(); mode != "auto" && mode != "off" {
			return nil, configErr(ErrSandboxElsewhere)
		}
		s.exec, err = s.remoteExecutor(ctx, opts.Stderr)
	} else {
		s.exec, err = s.sandboxExecutor(ctx, opts.Stderr)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ErrSandboxElsewhere refuses a sandbox asked for with remote hosts.
var ErrSandboxElsewhere = errors.New("the sandbox settings (--sandbox flags, --allow-domain and the like, $DSH_BASH_SANDBOX=on, the configuration file's sandbox.mode \"on\") apply where commands run: with --executor-cmd or --remote, give them to the far side's dsh-bash executor")

// Executor is the executor built.
func (s *Setup) Executor() bash.Executor { return s.exec }

// Proxy is the network allowlist's proxy, nil without the allowlist. It
// asks nobody until a front end sets its asker (egress.Proxy.SetFront:
// mcpserver and acpagent through their Options.Egress).
func (s *Setup) Proxy() *egress.Proxy { return s.proxy }

// Warnings are what the user should be told about what was built (no
// sandbox in the auto mode, what the Landlock layer cannot do), each a
// line without a newline.
func (s *Setup) Warnings() []string { return s.warnings }

// Hosts are the remote hosts' names, in the order of the configuration.
func (s *Setup) Hosts() []string { return s.hosts }

// Mode is the sandbox mode asked for: auto, on, jail, landlock or off.
func (s *Setup) Mode() string { return cmp.Or(s.cfg.Sandbox.Mode, "auto") }

// Layer names the sandbox's layer where commands run here ("jail",
// "landlock"), "" without the sandbox.
func (s *Setup) Layer() string {
	if s.se == nil {
		return ""
	}
	return s.layer.String()
}

// Sandboxed reports whether commands run in the sandbox here.
func (s *Setup) Sandboxed() bool { return s.se != nil }

// Unsandboxed says why the auto mode runs commands without the sandbox
// ("" where it does not).
func (s *Setup) Unsandboxed() string { return s.reason }

// Close closes the executor, which kills every command, then the proxy,
// whose listeners the jails used.
func (s *Setup) Close() error {
	err := s.exec.Close()
	s.closeProxy()
	return err
}

// CloseProxy closes the proxy alone, for an executor that something else
// closes (remote.Serve).
func (s *Setup) CloseProxy() { s.closeProxy() }

func (s *Setup) closeProxy() {
	if s.proxy != nil {
		s.proxy.Close()
		s.proxy = nil
	}
}
