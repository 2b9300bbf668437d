package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"

	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/egress"
)

// jailForwards are the services on the host's loopback that the allow
// rules name with a port, as each jail has them: at the same address of
// its own loopback (localhost's at 127.0.0.1 and, where the jail has
// IPv6, ::1), each connecting on the host first to the same address,
// then to the rule's other one. A loopback rule without a port, one a
// deny rule refuses, or forwards a jail cannot have are usage errors.
func (n *netFlags) jailForwards() ([]sandbox.Forward, error) {
	allow, deny := n.rules()
	fs, err := egress.Forwards(allow, deny)
	if err != nil {
		return nil, forwardUsage(err)
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
		return nil, usageErr(fmt.Errorf("--allow-domain %s (or allowDomains in the config file): %s", ruleAt(fs, fe.Listen), fe.Why))
	} else if err != nil {
		return nil, usageErr(err)
	}
	n.forwards = fs
	return out, nil
}

// forwardUsage is the usage error of a rule egress.Forwards refused.
func forwardUsage(err error) error {
	var fe *egress.ForwardError
	switch {
	case !errors.As(err, &fe):
		return usageErr(fmt.Errorf("--allow-domain/--deny-domain: %w", err))
	case fe.Deny != "":
		return usageErr(fmt.Errorf("--allow-domain %s: the rule --deny-domain %s refuses it; drop one of them", fe.Rule, fe.Deny))
	}
	return usageErr(fmt.Errorf("--allow-domain %s (or allowDomains in the config file): a jail's loopback is its own, and a service on the host's is reached from the jails only at a port you name, which is then forwarded to the same address in each jail: give the port, as 127.0.0.1:5432, localhost:8080 or [::1]:6379", fe.Rule))
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

// forwarded are the forwarded services as the model and doctor name
// them: the address, or localhost and its port.
func (n *netFlags) forwarded() []string {
	out := make([]string, len(n.forwards))
	for i, f := range n.forwards {
		out[i] = f.Addrs[0].String()
		if len(f.Addrs) > 1 {
			out[i] = "localhost:" + strconv.Itoa(int(f.Addrs[0].Port()))
		}
	}
	return out
}

// notForwarded are the allow rules that the proxy alone lets through.
func (n *netFlags) notForwarded(allow []string) []string {
	var out []string
	for _, r := range allow {
		if !slices.ContainsFunc(n.forwards, func(f egress.Forward) bool { return f.Rule == r }) {
			out = append(out, r)
		}
	}
	return out
}

// describeForwards writes, for doctor, the host's services each jail
// has in its loopback.
func describeForwards(w io.Writer, n *netFlags) {
	if len(n.forwards) == 0 {
		fmt.Fprintln(w, "host services forwarded into each jail: none (a service on the host's loopback is allowed with its port: --allow-domain 127.0.0.1:5432, localhost:8080, [::1]:6379)")
		return
	}
	fmt.Fprintln(w, "host services forwarded into each jail, at the same address of its loopback, where any client reaches them (not through the proxy):")
	for i, f := range n.forwards {
		in := f.Addrs[0].String()
		if len(f.Addrs) > 1 {
			in = f.Addrs[0].String() + " and " + f.Addrs[1].String() + " (where the jail has IPv6)"
		}
		fmt.Fprintf(w, "  %s on the host -> %s in the jail\n", n.forwarded()[i], in)
	}
}
