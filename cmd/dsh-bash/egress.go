package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/toolbash"
)

// netFlags are the network allowlist's (--sandbox-network=allowlist).
type netFlags struct {
	allow, deny listFlag
	defaults    bool // the default developer allowlist (egress.DefaultAllow) too

	proxy    *egress.Proxy    // once made; closed by closeExecutor
	asks     bool             // the front end asks the user about other hosts
	forwards []egress.Forward // the host's services the jails have, once jailForwards ran
}

// reachesLocal reports whether an allow rule names an address, or
// localhost with a port (which may be a loopback or private one: the
// server's own port, say, forwarded into the jails).
func (n *netFlags) reachesLocal() bool { return egress.NamesAddresses(n.allow) }

// rules are the allowlist's allow and deny rules.
func (n *netFlags) rules() (allow, deny []string) {
	if n.defaults {
		allow = egress.DefaultAllow()
	}
	return append(allow, n.allow...), slices.Clone(n.deny)
}

// makeProxy makes the allowlist's proxy, which tells a refused command
// why. It asks nobody until the front end, made after it, sets its asker
// (egress.Proxy.SetFront: mcp and acp through their Options.Egress, run
// with useTerminal); until then an unlisted host is refused unasked.
func (n *netFlags) makeProxy() (*egress.Proxy, error) {
	allow, deny := n.rules()
	p, err := egress.New(&egress.Options{Allow: allow, Deny: deny,
		RefusalText: func(r *egress.Refusal) string { return toolbash.EgressRefusal(r, howToAllowDomain) }})
	if err != nil {
		return nil, usageErr(fmt.Errorf("--allow-domain/--deny-domain: %w", err))
	}
	n.proxy = p
	return p, nil
}

// close closes the proxy, if one was made.
func (n *netFlags) close() {
	if n.proxy != nil {
		n.proxy.Close()
		n.proxy = nil
	}
}

// howToAllowDomain is how the user allows a host.
func howToAllowDomain(host string) string {
	return "restart dsh-bash with --allow-domain " + host + ` (or add it to "allowDomains" in the sandbox section of the config file)`
}

// useTerminal makes the terminal the front end of the allowlist's proxy,
// if there is one (dsh-bash run): it asks p, the terminal's prompter, nil
// where stdin is no terminal (then an unlisted host is refused unasked),
// and says each refusal on stderr.
func (n *netFlags) useTerminal(p *prompter, stderr io.Writer) {
	proxy := n.proxy
	if proxy == nil {
		return
	}
	var ask func(context.Context, egress.Question) (egress.Decision, error)
	if p != nil {
		ask, n.asks = networkAsker(p), true
	}
	proxy.SetFront(ask, func(r *egress.Refusal) {
		if r.Reason != egress.Malformed {
			fmt.Fprintf(stderr, "dsh-bash run: %s\n", proxy.RefusalText(r))
		}
	})
}
