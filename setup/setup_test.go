package setup

import (
	"errors"
	"testing"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/permission"
)

// TestOff: with the sandbox off, the executor is the local one, with no
// facts, no proxy and no instructions.
func TestOff(t *testing.T) {
	s, err := New(t.Context(), &Config{Sandbox: Sandbox{Mode: "off"}, Local: &local.Options{Cwd: t.TempDir()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.Executor().(*local.Executor); !ok || s.Sandboxed() || s.Facts() != nil || s.Proxy() != nil || s.OffersEscape() {
		t.Errorf("off: executor %T, sandboxed %v, facts %v, proxy %v", s.Executor(), s.Sandboxed(), s.Facts(), s.Proxy())
	}
	if got := s.Instructions(true); got != "" {
		t.Errorf("off: instructions %q", got)
	}
	if got := s.Containment(); got != "none" {
		t.Errorf("off: containment %q", got)
	}
}

// TestConfigErrors: what no configuration can mean is a *ConfigError.
func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]*Config{
		"mode":             {Sandbox: Sandbox{Mode: "maybe"}},
		"remote and on":    {Sandbox: Sandbox{Mode: "on"}, Remote: Remote{ExecutorCmds: []string{"true"}}},
		"empty executor":   {Remote: Remote{ExecutorCmds: []string{" "}}},
		"unparsed command": {Remote: Remote{ExecutorCmds: []string{"'x"}}},
	} {
		_, err := New(t.Context(), cfg, nil)
		if ce := (*ConfigError)(nil); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *ConfigError", name, err)
		}
	}
}

// TestGateOptions: nothing configured checks nothing; the default of a
// front end is allow, but ask under acp, unless one is configured.
func TestGateOptions(t *testing.T) {
	p := &Permissions{}
	if o, err := p.GateOptions("mcp"); o != nil || err != nil {
		t.Errorf("unconfigured: %v, %v", o, err)
	}
	p.Rules = []RuleSet{{Source: "--deny", Decision: permission.Deny, Patterns: []string{"git push"}}}
	for front, want := range map[string]permission.Decision{"mcp": permission.Allow, "run": permission.Allow, "acp": permission.Ask} {
		o, err := p.GateOptions(front)
		if err != nil || o.Policy.Unmatched != want || len(o.Policy.Rules) != 1 || !o.Policy.ReadOnly {
			t.Errorf("%s: %+v, %v", front, o, err)
		}
	}
	p.Default, p.DefaultSource = "ask", "--default"
	if d, src := p.Unmatched("mcp"); d != permission.Ask || src != "--default" {
		t.Errorf("configured default: %v from %q", d, src)
	}
}

// TestFactsFromExecutor: the facts are what the sandbox built reports:
// its layer, its /tmp's size, its network.
func TestFactsFromExecutor(t *testing.T) {
	s, err := New(t.Context(), &Config{Sandbox: Sandbox{Network: sandbox.NetworkOff}, Local: &local.Options{Cwd: t.TempDir()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	se, ok := s.Executor().(*sandbox.Executor)
	if !ok {
		t.Skipf("no sandbox here: %s", s.Unsandboxed())
	}
	layer, _ := se.Layer()
	f := s.Facts()
	if !f.NetworkOff || f.Landlock != (layer == sandbox.LayerLandlock) || !f.Unsandboxed {
		t.Errorf("facts %+v of a sandbox in the %v layer", f, layer)
	}
	if tmp := se.Limits().Tmp; layer == sandbox.LayerJail && tmp > 0 && f.TmpSize != sandbox.ByteSize(tmp) {
		t.Errorf("facts' /tmp %q, the jails' %d bytes", f.TmpSize, tmp)
	}
	if want := map[sandbox.Layer]string{sandbox.LayerJail: "sandbox (jail)", sandbox.LayerLandlock: "sandbox (landlock layer)"}[layer]; s.Containment() != want {
		t.Errorf("containment %q, want %q", s.Containment(), want)
	}
}
