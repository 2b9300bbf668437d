package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
)

// sandboxFlags choose and shape the sandbox.
type sandboxFlags struct {
	mode       string // auto, on, off
	network    string // on, off
	lockCaches bool
	writable   listFlag
	readOnly   listFlag
	hidden     listFlag
	active     bool // set once the executor is made: commands run jailed
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	def := os.Getenv("DSH_BASH_SANDBOX")
	if def == "" {
		def = "auto"
	}
	fs.StringVar(&f.mode, "sandbox", def, "run each session's commands in a jail: auto (where it works, else warn), on (refuse to start without it), off; default $DSH_BASH_SANDBOX, else auto")
	fs.StringVar(&f.network, "sandbox-network", "on", "network inside the jails: on, or off (loopback only)")
	fs.BoolVar(&f.lockCaches, "sandbox-lock-caches", false, "make the tool caches in the home directory (~/.cache, ~/go, ~/.npm, …) read-only too")
	fs.Var(&f.writable, "sandbox-writable", "another path commands may change (repeatable)")
	fs.Var(&f.readOnly, "sandbox-read-only", "a path that stays read-only even inside a writable one (repeatable)")
	fs.Var(&f.hidden, "sandbox-hide", "a path commands cannot see (repeatable)")
}

// unsandboxedWarning is said on stderr, and in the MCP server's
// instructions, when commands run without a sandbox under --sandbox=auto.
const unsandboxedWarning = "commands are NOT sandboxed: they run with this process's full authority"

// executor makes the sandbox executor or the local one, as the flags say.
func (f *sandboxFlags) executor(ctx context.Context, name string, opts *local.Options, stderr io.Writer) (bash.Executor, error) {
	policy, err := f.policy()
	if err != nil {
		return nil, err
	}
	switch f.mode {
	case "off":
		return local.New(opts)
	case "on", "auto":
	default:
		return nil, fmt.Errorf("--sandbox must be auto, on or off (got %q)", f.mode)
	}
	se, err := sandbox.New(ctx, &sandbox.Options{Local: opts, Policy: policy})
	if err == nil {
		f.active = true
		return se, nil
	}
	if f.mode == "on" || !errors.Is(err, sandbox.ErrUnavailable) {
		return nil, err
	}
	fmt.Fprintf(stderr, "dsh-bash %s: WARNING: %s (%v; --sandbox=off silences this, --sandbox=on refuses to start)\n", name, unsandboxedWarning, err)
	return local.New(opts)
}

func (f *sandboxFlags) policy() (sandbox.Policy, error) {
	p := sandbox.Policy{LockCaches: f.lockCaches, Writable: f.writable, ReadOnly: f.readOnly, Hidden: f.hidden}
	switch f.network {
	case "on":
	case "off":
		p.Network = sandbox.NetworkOff
	default:
		return p, fmt.Errorf("--sandbox-network must be on or off (got %q)", f.network)
	}
	return p, nil
}

// instructions are the MCP server's instructions: a warning when commands
// are not sandboxed.
func (f *sandboxFlags) instructions() string {
	if f.active || f.mode == "off" {
		return ""
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
