package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Forward is a service on the host's loopback that a NetworkAllowlist
// jail has in its own loopback (Policy.Forward): the agent listens at
// Listen in the jail's network namespace and hands the listener to the
// host, where Options.Egress (a Forwarder) connects each connection the
// listener accepts to the host's service. Commands reach it with any
// client, the ones that ignore proxy variables (psql, JDBC) too, while
// the rest of the jail's loopback stays the session's own.
type Forward struct {
	// Listen is the address in the jail's loopback: the service's own
	// on the host (127.0.0.1:5432), so that the same address works in
	// and out of the jail.
	Listen netip.AddrPort
	// To are where the host connects, in the order to try them (for
	// localhost, 127.0.0.1 and ::1), given to Forwarder.Forward.
	To []netip.AddrPort
	// Optional: a jail that cannot listen at Listen (::1, where its
	// network namespace has no IPv6) goes without it, rather than fail
	// to start.
	Optional bool
}

// Forwarder connects the connections a jail's Forward listener accepts
// to the host's service. An *egress.Proxy is one: with Policy.Forward,
// Options.Egress must be one too.
type Forwarder interface {
	Forward(l net.Listener, owner string, to []netip.AddrPort) error
}

// ForwardError is a forward that cannot be (see CheckForwards).
type ForwardError struct {
	Listen netip.AddrPort
	Why    string
}

func (e *ForwardError) Error() string {
	return fmt.Sprintf("sandbox: the forward to %s in the jail: %s", e.Listen, e.Why)
}

// maxForwards bounds the forwards of a jail: its agent hands the host
// their listeners with the proxy's in one message.
const maxForwards = 63

// CheckForwards refuses a list of forwards that a jail cannot have: an
// address outside loopback, the port of the jail's proxy (ProxyAddr),
// two at one address, one with nowhere to connect to, or more than 63;
// each as a *ForwardError.
func CheckForwards(fs []Forward) error {
	proxy := netip.MustParseAddrPort(ProxyAddr)
	seen := map[netip.AddrPort]bool{}
	for i, f := range fs {
		why := ""
		switch a := f.Listen.Addr(); {
		case !a.IsLoopback() || a.Zone() != "" || a.Is4In6():
			why = "not an address of the loopback"
		case f.Listen.Port() == proxy.Port():
			why = fmt.Sprintf("port %d is the jail's proxy's (%s)", proxy.Port(), ProxyAddr)
		case f.Listen.Port() == 0:
			why = "no port"
		case seen[f.Listen]:
			why = "forwarded twice"
		case len(f.To) == 0:
			why = "nowhere to connect to on the host"
		case i >= maxForwards:
			why = fmt.Sprintf("more than %d forwards", maxForwards)
		}
		if why != "" {
			return &ForwardError{Listen: f.Listen, Why: why}
		}
		seen[f.Listen] = true
	}
	return nil
}

// checkForwardsOf refuses Policy.Forward without the allowlist or a
// Forwarder, or with a forward that cannot be.
func checkForwardsOf(o *Options) error {
	if len(o.Policy.Forward) == 0 {
		return nil
	}
	if o.Policy.Network != NetworkAllowlist {
		return errors.New("sandbox: Policy.Forward needs NetworkAllowlist")
	}
	if _, ok := o.Egress.(Forwarder); !ok {
		return errors.New("sandbox: Policy.Forward needs an Options.Egress that is a Forwarder")
	}
	return CheckForwards(o.Policy.Forward)
}
