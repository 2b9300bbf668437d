package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/dshgo/dsh/internal/testwait"
)

// fakeDNS is the tests' resolver: names under .test, never the network.
var fakeDNS = map[string][]string{
	"registry.test":     {"198.51.100.10"},
	"api.registry.test": {"198.51.100.11"},
	"rebind.test":       {"127.0.0.1"},
	"metadata.test":     {"169.254.169.254"},
	"mixed.test":        {"10.0.0.5", "198.51.100.12"},
	"mapped.test":       {"::ffff:127.0.0.1"},
	"nat64.test":        {"64:ff9b::a9fe:a9fe"}, // 169.254.169.254
	"private6.test":     {"fd00::1"},
	"denied-addr.test":  {"198.51.100.66"},
	"host.test":         {"198.51.100.99"},
}

func resolveFake(_ context.Context, host string) ([]netip.Addr, error) {
	ss, ok := fakeDNS[host]
	if !ok {
		return nil, fmt.Errorf("no such host %s", host)
	}
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name        string
		allow, deny []string
		host        string
		want        []string // the addresses to connect to
		why         Reason   // else the refusal
	}{
		{"listed name", []string{"registry.test"}, nil, "registry.test", []string{"198.51.100.10"}, 0},
		{"case and trailing dot", []string{"Registry.TEST"}, nil, "REGISTRY.test.", []string{"198.51.100.10"}, 0},
		{"unlisted name, no asker", []string{"registry.test"}, nil, "api.registry.test", nil, Unlisted},
		{"wildcard: a subdomain", []string{"*.registry.test"}, nil, "api.registry.test", []string{"198.51.100.11"}, 0},
		{"wildcard: not the apex", []string{"*.registry.test"}, nil, "registry.test", nil, Unlisted},
		{"wildcard: not a suffix of a label", []string{"*.registry.test"}, nil, "evilregistry.test", nil, Unlisted},
		{"deny wins over allow", []string{"*.registry.test"}, []string{"api.registry.test"}, "api.registry.test", nil, Denied},
		{"deny wildcard wins", []string{"registry.test"}, []string{"*.test"}, "registry.test", nil, Denied},
		{"star allows names", []string{"*"}, nil, "registry.test", []string{"198.51.100.10"}, 0},
		{"star denies all", []string{"registry.test"}, []string{"*"}, "registry.test", nil, Denied},
		// Local addresses: refused unless an address rule names them.
		{"loopback literal", []string{"*"}, nil, "127.0.0.1", nil, LocalAddress},
		{"loopback v6 literal", []string{"*"}, nil, "[::1]", nil, LocalAddress},
		{"metadata literal", []string{"*"}, nil, "169.254.169.254", nil, LocalAddress},
		{"unspecified", []string{"*"}, nil, "0.0.0.0", nil, LocalAddress},
		{"mapped loopback literal", []string{"*"}, nil, "::ffff:127.0.0.1", nil, LocalAddress},
		{"CGNAT", []string{"*"}, nil, "100.64.1.1", nil, LocalAddress},
		{"address rule allows loopback", []string{"127.0.0.1"}, nil, "127.0.0.1", []string{"127.0.0.1"}, 0},
		{"CIDR rule allows private", []string{"10.0.0.0/8"}, nil, "10.9.8.7", []string{"10.9.8.7"}, 0},
		{"public literal unlisted", []string{"registry.test"}, nil, "198.51.100.10", nil, Unlisted},
		{"public literal under star", []string{"*"}, nil, "198.51.100.10", []string{"198.51.100.10"}, 0},
		{"deny CIDR wins", []string{"*", "10.0.0.0/8"}, []string{"10.1.0.0/16"}, "10.1.2.3", nil, Denied},
		// DNS rebinding: a listed name that resolves to a local address.
		{"rebinding to loopback", []string{"rebind.test"}, nil, "rebind.test", nil, LocalAddress},
		{"rebinding under star", []string{"*"}, nil, "metadata.test", nil, LocalAddress},
		{"rebinding via mapped v6", []string{"mapped.test"}, nil, "mapped.test", nil, LocalAddress},
		{"rebinding via NAT64", []string{"nat64.test"}, nil, "nat64.test", nil, LocalAddress},
		{"rebinding to ULA", []string{"private6.test"}, nil, "private6.test", nil, LocalAddress},
		{"rebinding allowed by address rule", []string{"rebind.test", "127.0.0.0/8"}, nil, "rebind.test", []string{"127.0.0.1"}, 0},
		{"mixed keeps the public address", []string{"mixed.test"}, nil, "mixed.test", []string{"198.51.100.12"}, 0},
		{"resolved address denied", []string{"denied-addr.test"}, []string{"198.51.100.66"}, "denied-addr.test", nil, Denied},
		{"no such host", []string{"*"}, nil, "nowhere.test", nil, Unreachable},
		// A zone hides an address from the ranges (and carries any bytes).
		{"zone on a denied range", []string{"*"}, []string{"2001:db8::/32"}, "[2001:db8::1%251]", nil, Malformed},
		{"zone on NAT64", []string{"*"}, nil, "64:ff9b::a9fe:a9fe%1", nil, Malformed},
		{"zone on loopback", []string{"*"}, nil, "::1%lo", nil, Malformed},
		{"mapped deny range", []string{"*"}, []string{"::ffff:203.0.113.0/120"}, "203.0.113.5", nil, Denied},
		{"mapped deny range, mapped address", []string{"*"}, []string{"::ffff:203.0.113.0/120"}, "::ffff:203.0.113.5", nil, Denied},
		// The host's own public address reaches its services.
		{"the host's address", []string{"*"}, nil, "198.51.100.99", nil, LocalAddress},
		{"a name for the host's address", []string{"host.test"}, nil, "host.test", nil, LocalAddress},
		{"the host's address, allowed", []string{"198.51.100.99"}, nil, "198.51.100.99", []string{"198.51.100.99"}, 0},
		{"not a name", []string{"*"}, nil, "a b", nil, Malformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(&Options{Allow: tc.allow, Deny: tc.deny, Resolve: resolveFake,
				HostAddrs: func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("198.51.100.99")} }})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			addrs, ref := p.check(t.Context(), "s", tc.host, 443)
			var got []string
			for _, a := range addrs {
				got = append(got, a.String())
			}
			var why Reason
			if ref != nil {
				why = ref.Reason
			}
			if why != tc.why || !slices.Equal(got, tc.want) {
				t.Errorf("check(%q) = %v, %v (%v); want %v, %v", tc.host, got, why, ref, tc.want, tc.why)
			}
		})
	}
}

func TestBadRules(t *testing.T) {
	for _, r := range []string{"", "exa mple.com", "*.", "10.0.0.0/33", "a..b", "http://x.com", "*.*.com", "x.com:0", "fe80::1%eth0"} {
		if _, err := New(&Options{Allow: []string{r}}); err == nil {
			t.Errorf("rule %q: no error", r)
		}
		if _, err := New(&Options{Deny: []string{r}}); err == nil {
			t.Errorf("deny rule %q: no error", r)
		}
	}
	if _, err := New(&Options{Allow: DefaultAllow()}); err != nil {
		t.Errorf("DefaultAllow: %v", err)
	}
	for _, r := range DefaultAllow() {
		rl, _ := parseRule(r)
		if rl.any || rl.prefix.IsValid() {
			t.Errorf("DefaultAllow holds %q, which is not a name", r)
		}
	}
}

func TestLocal(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1": true, "10.1.1.1": true, "172.16.0.1": true, "192.168.1.1": true,
		"169.254.169.254": true, "100.100.100.200": true, "0.1.2.3": true, "255.255.255.255": true,
		"224.0.0.1": true, "::1": true, "fe80::1": true, "fd12::1": true, "::": true, "ff02::1": true,
		"::ffff:10.0.0.1": true, "64:ff9b::7f00:1": true, "::7f00:1": true, "::a00:1": true, "64:ff9b:1::808:808": true,
		"8.8.8.8": false, "140.82.112.3": false, "2606:4700::1111": false, "64:ff9b::808:808": false,
	} {
		if got := Local(netip.MustParseAddr(s)); got != want {
			t.Errorf("Local(%s) = %v, want %v", s, got, want)
		}
	}
}

// TestHostAddrsDefault: by default the host's own interface addresses are
// refused like loopback, also where they are public: its services listen
// there too.
func TestHostAddrsDefault(t *testing.T) {
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var own netip.Addr
	for _, ia := range ifs {
		if pre, err := netip.ParsePrefix(ia.String()); err == nil && !Local(pre.Addr()) {
			own = pre.Addr()
		}
	}
	if !own.IsValid() {
		t.Skip("this host has no address beyond the local ranges")
	}
	p, err := New(&Options{Allow: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, ref := p.check(t.Context(), "s", own.String(), 80); ref == nil || ref.Reason != LocalAddress {
		t.Errorf("the host's address %s: %v, want it refused as local", own, ref)
	}
}

// TestAskPerPort: connections to one host on two ports are two questions,
// put one after the other (the user's "once" answered the port the
// question named).
func TestAskPerPort(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var asked []int
	questions := make(chan int, 2)
	p, err := New(&Options{Resolve: resolveFake, Ask: func(ctx context.Context, q Question) (Decision, error) {
		mu.Lock()
		asked = append(asked, q.Port)
		mu.Unlock()
		questions <- q.Port
		select {
		case <-release:
			return AllowOnce, nil
		case <-ctx.Done():
			return Deny, ctx.Err()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for _, port := range []int{443, 22} {
		wg.Go(func() {
			if _, ref := p.check(t.Context(), "s", "registry.test", port); ref != nil {
				t.Errorf("port %d: %v", port, ref)
			}
		})
	}
	testwait.Recv(t, questions, "the first question")
	close(release)
	testwait.Recv(t, questions, "the second question")
	wg.Wait()
}
