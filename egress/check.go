package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Reason is why the proxy refused a connection.
type Reason int

const (
	// Denied: a deny rule names the destination (Refusal.Rule).
	Denied Reason = iota + 1
	// Unlisted: no rule names it, and nobody could be asked (no
	// Options.Ask, or it failed).
	Unlisted
	// Declined: the user was asked about the host and port and said no.
	Declined
	// LocalAddress: the destination is, or its name resolves only to, a
	// local address (Refusal.Addr) that no address rule allows.
	LocalAddress
	// Unreachable: its name did not resolve, no address of it
	// answered, or its response could not be read (Refusal.Cause).
	Unreachable
	// Busy: the proxy has as many connections as it allows.
	Busy
	// Malformed: the client's request could not be read (Refusal.Cause).
	Malformed
	// TooManyQuestions: no rule names the destination, and the session's
	// user, asked about too many hosts already, was not asked about it
	// (Options.AskQueue, AskBurst, AskRefill).
	TooManyQuestions
	// DeclinedAll: the user declined every host not yet allowed, for the
	// rest of the session (DenyAllNew), and was not asked.
	DeclinedAll
)

// Refusal is a connection the proxy refused, and why.
type Refusal struct {
	Owner  string
	Host   string // as normalized: lower case, no brackets or trailing dot
	Port   int
	Reason Reason
	Rule   string     // Denied: the deny rule, as given
	Addr   netip.Addr // LocalAddress: the address refused
	Err    error      // Unreachable, Malformed: what failed; for logs only (see Cause)
	Max    int        // Busy: the number of connections allowed

	// Cause is what failed, for Unreachable and Malformed, in the
	// proxy's own words. Err is the error itself, for logs only: never
	// show it to the model, as it may quote what the far side sent (an
	// upstream's malformed header line, say).
	Cause Cause
	// Shown reports that the client is sent the refusal's text
	// (Options.RefusalText) where clients show it to the command: as the
	// body of the answer to a plain HTTP request, which curl prints. A
	// refused CONNECT or SOCKS5 request reaches the client only as a
	// status, and a Busy one as a closed connection: a front end that
	// tells the model of refusals need not repeat a Shown one.
	Shown bool
	// Asked reports that the session's user answered a question about
	// the destination (put for this connection, or for another that this
	// one waited with), whatever the answer; not where nobody could be
	// asked, or nobody answered in time (Unlisted).
	Asked bool

	allowRule string // the allow rule that let the destination through
	told      bool   // the decision on the connection was observed already
}

// Error is a short account of the refusal, in the proxy's own words
// (never Err's); what a command reads is Options.RefusalText's.
func (r *Refusal) Error() string {
	dest := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	switch r.Reason {
	case Denied:
		return fmt.Sprintf("egress: %s denied by rule %q", dest, r.Rule)
	case Unlisted:
		return fmt.Sprintf("egress: %s is not in the allowlist", dest)
	case Declined:
		return fmt.Sprintf("egress: the user declined %s", dest)
	case LocalAddress:
		return fmt.Sprintf("egress: %s is the local address %s, which no rule allows", dest, r.Addr)
	case Unreachable:
		return fmt.Sprintf("egress: %s unreachable: %v", dest, r.Cause)
	case Busy:
		return fmt.Sprintf("egress: %s refused: %d connections open", dest, r.Max)
	case TooManyQuestions:
		return fmt.Sprintf("egress: %s refused unasked: the user was asked about too many hosts", dest)
	case DeclinedAll:
		return fmt.Sprintf("egress: %s refused: the user declined every host not yet allowed, for this session", dest)
	}
	return fmt.Sprintf("egress: malformed request: %v", r.Cause)
}

// Question is a destination no rule names, for Options.Ask.
type Question struct {
	Owner string // the session's owner token, as given to Serve
	Host  string
	Port  int
}

// Decision is the user's answer to a Question.
type Decision int

const (
	// Deny refuses the host and port asked about for the rest of the
	// session (another port of the host is asked about anew).
	Deny Decision = iota
	// AllowOnce allows the connection asked about (and those to the same
	// host that waited for the same answer).
	AllowOnce
	// AllowSession allows the host for the rest of the session.
	AllowSession
	// DenyAllNew refuses the host and port asked about, and every host
	// not yet allowed, for the rest of the session: its user is not
	// asked again (until EndOwner).
	DenyAllNew
)

// check decides whether the owner's commands may reach host:port and
// returns the addresses to connect to, or why not.
func (p *Proxy) check(ctx context.Context, owner, host string, port int) ([]netip.Addr, *Refusal) {
	return p.checkRef(ctx, &Refusal{Owner: owner, Host: host, Port: port})
}

// checkRef is check on ref's owner, host and port. It fills ref: why not,
// or (where it returns no refusal) the allow rule that let the
// destination through; and whether the user was asked.
func (p *Proxy) checkRef(ctx context.Context, ref *Refusal) ([]netip.Addr, *Refusal) {
	host, port := normalize(ref.Host), ref.Port
	ref.Host = host
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			// A zone means nothing to a global address (the kernel drops
			// it) but hides one from the rules' ranges; and it may hold
			// any bytes, which the user's question would show.
			ref.Host, ref.Reason, ref.Cause, ref.Err = "", Malformed, BadDestination, errors.New("an address with a zone (%…)")
			return nil, ref
		}
		a = a.Unmap()
		ref.Host = a.String() // one spelling per address, for the rules and the questions
		return p.checkAddr(ctx, ref, a)
	}
	if !validName(host) {
		ref.Reason, ref.Cause, ref.Err = Malformed, BadDestination, fmt.Errorf("%q is not a host name", host)
		return nil, ref
	}
	if r, ok := p.deny.matchName(host, port); ok {
		ref.Reason, ref.Rule = Denied, r.text
		return nil, ref
	}
	if r, ok := p.allow.matchName(host, port); ok {
		ref.allowRule = r.text
	} else if why := p.ask(ctx, ref); why != 0 {
		ref.Reason = why
		return nil, ref
	}
	return p.resolve(ctx, ref)
}

// checkAddr decides on a destination given as an address.
func (p *Proxy) checkAddr(ctx context.Context, ref *Refusal, a netip.Addr) ([]netip.Addr, *Refusal) {
	if r, ok := p.deny.matchAddr(a, ref.Port); ok {
		ref.Reason, ref.Rule = Denied, r.text
		return nil, ref
	}
	if r, ok := p.deny.hasAny(); ok {
		ref.Reason, ref.Rule = Denied, r.text
		return nil, ref
	}
	if r, ok := p.allow.matchAddr(a, ref.Port); ok {
		ref.allowRule = r.text
		return []netip.Addr{a}, nil
	}
	if p.local(a) {
		ref.Reason, ref.Addr = LocalAddress, a
		return nil, ref
	}
	if r, ok := p.allow.hasAny(); ok {
		ref.allowRule = r.text
		return []netip.Addr{a}, nil
	}
	if why := p.ask(ctx, ref); why != 0 {
		ref.Reason = why
		return nil, ref
	}
	return []netip.Addr{a}, nil
}

// resolve looks an allowed name up and keeps the addresses the rules let
// commands reach: a name that resolves only to local addresses, or only
// to denied ones, is refused, whatever rule allowed the name.
func (p *Proxy) resolve(ctx context.Context, ref *Refusal) ([]netip.Addr, *Refusal) {
	addrs, err := p.lookup(ctx, ref.Host)
	if err != nil {
		ref.Reason, ref.Cause, ref.Err = Unreachable, lookupCause(err), err
		return nil, ref
	}
	var ok []netip.Addr
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if r, denied := p.deny.matchAddr(a, ref.Port); denied {
			ref.Reason, ref.Rule = Denied, r.text
			continue
		}
		if _, allowed := p.allow.matchAddr(a, ref.Port); !allowed && p.local(a) {
			ref.Reason, ref.Addr = LocalAddress, a
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		if ref.Reason == 0 {
			ref.Reason, ref.Cause, ref.Err = Unreachable, NoSuchHost, fmt.Errorf("%s has no address", ref.Host)
		}
		return nil, ref
	}
	return ok, nil
}

// lookup resolves host with Options.Resolve, or the system's resolver.
func (p *Proxy) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	if p.opts.Resolve != nil {
		return p.opts.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// local reports whether a is a local address (Local), or one of this
// host's own (Options.HostAddrs): a connection to the host's public
// address reaches its services as one to loopback does.
func (p *Proxy) local(a netip.Addr) bool {
	if Local(a) {
		return true
	}
	for _, h := range p.hostAddrs() {
		if h.Unmap().WithZone("") == a {
			return true
		}
	}
	return false
}

// hostAddrs are this host's addresses, Options.HostAddrs or its
// interfaces'.
func (p *Proxy) hostAddrs() []netip.Addr {
	if p.opts.HostAddrs != nil {
		return p.opts.HostAddrs()
	}
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, 0, len(ifs))
	for _, ia := range ifs {
		if pre, err := netip.ParsePrefix(ia.String()); err == nil {
			out = append(out, pre.Addr())
		}
	}
	return out
}
