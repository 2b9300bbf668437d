package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// A rule is one pattern of Options.Allow or Options.Deny:
//
//   - "example.com": that name alone;
//   - "*.example.com": every name below it (not example.com itself);
//   - "*": every name (not an address: a public one is then allowed too,
//     and no local one);
//   - "10.1.2.3", "::1": that address; "10.0.0.0/8": every address in it;
//   - a name, wildcard or address with a port ("db.example:5432",
//     "10.1.2.3:5432", "[::1]:6379"): that one port alone;
//     "localhost:8080" is the name localhost and the host's loopback
//     addresses 127.0.0.1 and ::1, at that port (see Forwards).
//
// Names are matched without regard to case or a trailing dot. An address
// rule is the only way to allow a local address (loopback, private,
// link-local, …: see Local), whether a command names it or a name
// resolves to it.
type rule struct {
	text   string // as given
	name   string // a name, or the suffix of a wildcard (".example.com")
	wild   bool   // "*.name"
	any    bool   // "*"
	prefix netip.Prefix
	port   int  // the one port it allows or denies; 0: every port
	local  bool // "localhost:port": 127.0.0.1 and ::1 too
}

// CheckRules reports the first pattern of rules that is not a rule (see
// Options.Allow).
func CheckRules(rules []string) error {
	_, err := compile(rules)
	return err
}

// NamesAddresses reports whether a pattern of rules is an address or a
// range (with a port or not), or localhost with a port: the only rules
// that can allow a local address.
func NamesAddresses(rules []string) bool {
	for _, p := range rules {
		if r, err := parseRule(p); err == nil && (r.prefix.IsValid() || r.local) {
			return true
		}
	}
	return false
}

// rules is a compiled Allow or Deny list.
type rules []rule

func compile(patterns []string) (rules, error) {
	rs := make(rules, 0, len(patterns))
	for _, p := range patterns {
		r, err := parseRule(p)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// parseRule reads one pattern.
func parseRule(p string) (rule, error) {
	s, port, err := cutPort(strings.ToLower(strings.TrimSpace(p)))
	r := rule{text: p, port: port}
	switch {
	case err != nil:
		return r, fmt.Errorf("egress: rule %q: %w", p, err)
	case port != 0 && (s == "*" || strings.Contains(s, "/")):
		return r, fmt.Errorf("egress: rule %q: a port goes with a name or an address, not with * or a range", p)
	case s == "*":
		r.any = true
		return r, nil
	case strings.Contains(s, "/"):
		pre, err := netip.ParsePrefix(s)
		if err != nil {
			return r, fmt.Errorf("egress: rule %q: not an address range: %w", p, err)
		}
		if a := pre.Addr(); a.Is4In6() && pre.Bits() >= 96 {
			// Destinations are matched unmapped: so is the range.
			pre = netip.PrefixFrom(a.Unmap(), pre.Bits()-96)
		}
		r.prefix = pre.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		if a.Zone() != "" {
			return r, fmt.Errorf("egress: rule %q: an address with a zone", p)
		}
		r.prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		return r, nil
	}
	name, wild := strings.CutPrefix(s, "*.")
	name = strings.TrimSuffix(name, ".")
	if !validName(name) {
		return r, fmt.Errorf("egress: rule %q: not a name, *.name, address or address range", p)
	}
	r.name, r.wild = name, wild
	if wild {
		r.name = "." + name
	}
	r.local = !wild && name == "localhost" && port != 0
	return r, nil
}

// cutPort splits a pattern into its host and port: "host:port",
// "[v6]:port", or a host alone (an IPv6 address without brackets holds
// colons, and no port).
func cutPort(s string) (host string, port int, err error) {
	var ps string
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 || end < len(s)-1 && s[end+1] != ':' {
			return s, 0, nil // not an address: parseRule says so
		}
		if end == len(s)-1 {
			return s[1:end], 0, nil
		}
		host, ps = s[1:end], s[end+2:]
	case strings.Count(s, ":") == 1:
		host, ps, _ = strings.Cut(s, ":")
	default:
		return s, 0, nil
	}
	n, err := strconv.Atoi(ps)
	if err != nil || n < 1 || n > 65535 || ps[0] < '1' || ps[0] > '9' {
		return host, 0, fmt.Errorf("port %q is not a port (1 to 65535)", ps)
	}
	return host, n, nil
}

// ports reports whether the rule holds port.
func (r rule) ports(port int) bool { return r.port == 0 || r.port == port }

// validName reports whether s is a host name of letters, digits, '-', '_'
// and dots, with no empty label.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// matchName returns the first rule naming host (a normalized name) at
// port.
func (rs rules) matchName(host string, port int) (rule, bool) {
	for _, r := range rs {
		switch {
		case !r.ports(port):
		case r.any:
			return r, true
		case r.name == "":
		case r.wild && strings.HasSuffix(host, r.name):
			return r, true
		case !r.wild && host == r.name:
			return r, true
		}
	}
	return rule{}, false
}

// matchAddr returns the first address rule holding a at port.
func (rs rules) matchAddr(a netip.Addr, port int) (rule, bool) {
	for _, r := range rs {
		if !r.ports(port) {
			continue
		}
		if r.prefix.IsValid() && r.prefix.Contains(a) || r.local && (a == loopback4 || a == loopback6) {
			return r, true
		}
	}
	return rule{}, false
}

// The addresses the name localhost stands for in a rule.
var (
	loopback4 = netip.MustParseAddr("127.0.0.1")
	loopback6 = netip.IPv6Loopback()
)

// hasAny reports whether the list holds "*".
func (rs rules) hasAny() (rule, bool) {
	for _, r := range rs {
		if r.any {
			return r, true
		}
	}
	return rule{}, false
}

// normalize makes a host as a client sent it comparable with the rules:
// lower case, no trailing dot, no brackets around an IPv6 address.
func normalize(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

// Local reports whether a is an address the proxy refuses unless an
// address rule allows it: loopback, private (RFC 1918, fc00::/7), shared
// (100.64.0.0/10), link-local (169.254.0.0/16, where clouds keep their
// metadata service, and fe80::/10), unspecified, multicast, broadcast, the
// "this network" block, local-use NAT64 (64:ff9b:1::/48), and an IPv4
// address of one of those embedded in IPv6 (mapped, IPv4-compatible, or
// NAT64's 64:ff9b::/96).
func Local(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() && (nat64.Contains(a) || compat.Contains(a)) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:16]))
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range slices.Concat(localV4, localV6) {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	compat  = netip.MustParsePrefix("::/96")                          // IPv4-compatible, deprecated
	localV6 = []netip.Prefix{netip.MustParsePrefix("64:ff9b:1::/48")} // local-use NAT64 (RFC 8215)
	localV4 = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("240.0.0.0/4"),
	}
)
