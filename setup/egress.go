package setup

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/toolbash"
)

// AllowlistRules are the network allowlist's allow rules (the default
// developer hosts first, unless Sandbox.NoDefaultDomains) and deny rules.
func (s *Setup) AllowlistRules() (allow, deny []string) {
	sb := &s.cfg.Sandbox
	if !sb.NoDefaultDomains {
		allow = egress.DefaultAllow()
	}
	return append(allow, sb.AllowDomains...), slices.Clone(sb.DenyDomains)
}

// makeProxy makes the allowlist's proxy, which tells a refused command
// why.
func (s *Setup) makeProxy() (*egress.Proxy, error) {
	allow, deny := s.AllowlistRules()
	p, err := egress.New(&egress.Options{Allow: allow, Deny: deny, Observe: s.observe,
		RefusalText: func(r *egress.Refusal) string { return toolbash.EgressRefusal(r, howToAllowDomain) }})
	if err != nil {
		return nil, configErr(fmt.Errorf("--allow-domain/--deny-domain: %w", err))
	}
	s.proxy = p
	return p, nil
}

// howToAllowDomain is how the user allows a host.
func howToAllowDomain(host string) string {
	return "restart dsh-bash with --allow-domain " + host + ` (or add it to "allowDomains" in the sandbox section of the config file)`
}

// jailForwards are the services on the host's loopback that the allow
// rules name with a port, as each jail has them: at the same address of
// its own loopback (localhost's at 127.0.0.1 and, where the jail has
// IPv6, ::1), each connecting on the host first to the same address,
// then to the rule's other one. A loopback rule without a port, one a
// deny rule refuses, or forwards a jail cannot have are errors.
func (s *Setup) jailForwards() ([]sandbox.Forward, error) {
	allow, deny := s.AllowlistRules()
	fs, err := egress.Forwards(allow, deny)
	if err != nil {
		return nil, forwardErr(err)
	}
	var out []sandbox.Forward
	for _, f := range fs {
		for i, a := range f.Addrs {
			to := append([]netip.AddrPort{a}, slices.Delete(slices.Clone(f.Addrs), i, i+1)...)
			out = append(out, sandbox.Forward{Listen: a, To: to, Optional: i > 0})
		}
	}
	var fe *sandbox.ForwardError
	if err := sandbox.CheckForwards(out); errors.As(err, &fe) {
		return nil, configErr(fmt.Errorf("--allow-domain %s (or allowDomains in the config file): %s", ruleAt(fs, fe.Listen), fe.Why))
	} else if err != nil {
		return nil, configErr(err)
	}
	s.forwards = fs
	return out, nil
}

// forwardErr is the error of a rule egress.Forwards refused.
func forwardErr(err error) error {
	var fe *egress.ForwardError
	switch {
	case !errors.As(err, &fe):
		return configErr(fmt.Errorf("--allow-domain/--deny-domain: %w", err))
	case fe.Deny != "":
		return configErr(fmt.Errorf("--allow-domain %s: the rule --deny-domain %s refuses it; drop one of them", fe.Rule, fe.Deny))
	}
	return configErr(fmt.Errorf("--allow-domain %s (or allowDomains in the config file): a jail's loopback is its own, and a service on the host's is reached from the jails only at a port you name, which is then forwarded to the same address in each jail: give the port, as 127.0.0.1:5432, localhost:8080 or [::1]:6379", fe.Rule))
}

// ruleAt is the last rule forwarded to at (a second rule, where two are).
func ruleAt(fs []egress.Forward, at netip.AddrPort) string {
	rule := at.String()
	for _, f := range fs {
		if slices.Contains(f.Addrs, at) {
			rule = f.Rule
		}
	}
	return rule
}

// Forwards are the host's services forwarded into each jail, where the
// allowlist names them.
func (s *Setup) Forwards() []egress.Forward { return s.forwards }

// Forwarded are the forwarded services as the model and the user name
// them: the address, or localhost and its port.
func (s *Setup) Forwarded() []string {
	out := make([]string, len(s.forwards))
	for i, f := range s.forwards {
		out[i] = f.Addrs[0].String()
		if len(f.Addrs) > 1 {
			out[i] = "localhost:" + strconv.Itoa(int(f.Addrs[0].Port()))
		}
	}
	return out
}

// notForwarded are the allow rules that the proxy alone lets through.
func (s *Setup) notForwarded(allow []string) []string {
	var out []string
	for _, r := range allow {
		if !slices.ContainsFunc(s.forwards, func(f egress.Forward) bool { return f.Rule == r }) {
			out = append(out, r)
		}
	}
	return out
}
