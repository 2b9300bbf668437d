package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Forward is a service on the host's loopback that an allow rule names
// with its port ("127.0.0.1:5432", "localhost:8080", "[::1]:6379"). A jail
// with a network namespace of its own has a loopback of its own, where
// clients go directly (NO_PROXY) and where clients that ignore proxy
// variables (psql, JDBC) connect anyway: such a service is given to the
// jail at the same address in its loopback, and Proxy.Forward connects
// what the jail accepts there to the host's.
type Forward struct {
	Rule string // as given
	// Addrs are the rule's address; for localhost, 127.0.0.1 then ::1
	// (the addresses the name stands for), all at the rule's port.
	Addrs []netip.AddrPort
}

// ForwardError is an allow rule that names the host's loopback (an
// address or range within it, or localhost) but cannot be forwarded to a
// jail: it names no port, or a deny rule refuses it.
type ForwardError struct {
	Rule string // the allow rule, as given
	Deny string // the deny rule that refuses it; "" where Rule has no port
}

func (e *ForwardError) Error() string {
	if e.Deny != "" {
		return fmt.Sprintf("egress: rule %q: the deny rule %q refuses it", e.Rule, e.Deny)
	}
	return fmt.Sprintf("egress: rule %q names the host's loopback without a port: a jail's loopback is its own, and a service of the host's is forwarded there only at a port a rule names (127.0.0.1:5432, localhost:8080, [::1]:6379)", e.Rule)
}

// Forwards are the host's loopback services that the allow rules name
// with a port, in the rules' order. It fails on a rule it cannot read,
// and with a *ForwardError on one that names the host's loopback without
// a port or that a deny rule refuses (a deny wins).
func Forwards(allow, deny []string) ([]Forward, error) {
	as, err := compile(allow)
	if err != nil {
		return nil, err
	}
	ds, err := compile(deny)
	if err != nil {
		return nil, err
	}
	var out []Forward
	for _, r := range as {
		if !r.loopback() {
			continue
		}
		if r.port == 0 {
			return nil, &ForwardError{Rule: r.text}
		}
		f := Forward{Rule: r.text}
		addrs := []netip.Addr{r.prefix.Addr()}
		if r.local {
			addrs = []netip.Addr{loopback4, loopback6}
		}
		for _, a := range addrs {
			f.Addrs = append(f.Addrs, netip.AddrPortFrom(a, uint16(r.port)))
		}
		if d, ok := ds.refuses(r, f.Addrs); ok {
			return nil, &ForwardError{Rule: r.text, Deny: d.text}
		}
		out = append(out, f)
	}
	return out, nil
}

// loopback reports whether the rule names the host's loopback alone: the
// name localhost, or an address or range within 127.0.0.0/8 or ::1.
func (r rule) loopback() bool {
	switch {
	case r.local || !r.wild && r.name == "localhost":
		return true
	case !r.prefix.IsValid():
		return false
	}
	a := r.prefix.Addr()
	return a.IsLoopback() && (a.Is6() || r.prefix.Bits() >= 8)
}

// refuses returns the deny rule that refuses the allow rule a's name or
// one of its addresses addrs.
func (ds rules) refuses(a rule, addrs []netip.AddrPort) (rule, bool) {
	if d, ok := ds.hasAny(); ok {
		return d, true
	}
	if a.name != "" {
		if d, ok := ds.matchName(a.name, a.port); ok {
			return d, true
		}
	}
	for _, ap := range addrs {
		if d, ok := ds.matchAddr(ap.Addr(), int(ap.Port())); ok {
			return d, true
		}
	}
	return rule{}, false
}

// Forward answers the connections l accepts, made by the commands of the
// session owner, as Serve does and within the same bounds (connections
// at once, over all and per session; the idle timeout), until l is closed
// (then it returns nil) or the proxy is (ErrClosed); but it reads no
// request: it connects each connection to the first address of to (a
// Forward's Addrs, in the order to try them) that answers, and moves
// the bytes both ways. It asks nobody: an address an allow rule names at
// its port (the user's own allowance) is connected to, unless a deny
// rule names it; any other is refused as Unlisted. A refusal, or no
// address answering (Unreachable), closes the connection and is told to
// Options.Refused. Forward takes l over: it is closed when Forward
// returns.
func (p *Proxy) Forward(l net.Listener, owner string, to []netip.AddrPort) error {
	if len(to) == 0 {
		l.Close()
		return errors.New("egress: Forward: no address to connect to")
	}
	return p.serve(l, owner, func(c net.Conn, owner string) {
		up, ref := p.dialForward(owner, to)
		if ref != nil {
			p.refused(ref)
			return
		}
		defer up.Close()
		p.tunnel(c, up)
	})
}

// dialForward connects to the first address of to that the rules let
// through and that answers.
func (p *Proxy) dialForward(owner string, to []netip.AddrPort) (net.Conn, *Refusal) {
	ctx, cancel := context.WithTimeout(p.ctx, p.dialTimeout)
	defer cancel()
	ref := &Refusal{Owner: owner, Reason: Unlisted}
	var errs []error
	for _, ap := range to {
		a, port := ap.Addr().Unmap(), int(ap.Port())
		ref.Host, ref.Port = a.String(), port
		if r, ok := p.deny.matchAddr(a, port); ok {
			ref.Reason, ref.Rule = Denied, r.text
			continue
		}
		if r, ok := p.deny.hasAny(); ok {
			ref.Reason, ref.Rule = Denied, r.text
			continue
		}
		if _, ok := p.allow.matchAddr(a, port); !ok {
			continue
		}
		up, err := p.dial(ctx, netip.AddrPortFrom(a, ap.Port()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !p.track(up, nil) {
			return nil, &Refusal{Owner: owner, Host: a.String(), Port: port, Reason: Unreachable, Err: ErrClosed}
		}
		r, _ := p.allow.matchAddr(a, port)
		p.observe(&Refusal{Owner: owner, Host: a.String(), Port: port, allowRule: r.text}, "allow")
		return &trackedConn{Conn: up, p: p}, nil
	}
	if len(errs) > 0 {
		ref.Reason, ref.Rule, ref.Err = Unreachable, "", errors.Join(errs...)
		ref.Host, ref.Port = to[0].Addr().Unmap().String(), int(to[0].Port())
	}
	return nil, ref
}
