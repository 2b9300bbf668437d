package egress

import (
	"context"
	"net/netip"
	"slices"
	"testing"
)

// TestPortRules: a rule with a port allows (or denies) that port alone;
// localhost with a port stands for the name and the host's two loopback
// addresses.
func TestPortRules(t *testing.T) {
	local := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "localhost" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, nil
		}
		return resolveFake(t.Context(), host)
	}
	for _, tc := range []struct {
		name        string
		allow, deny []string
		host        string
		port        int
		want        []string
		why         Reason
	}{
		{"private address at its port", []string{"10.0.0.5:5432"}, nil, "10.0.0.5", 5432, []string{"10.0.0.5"}, 0},
		{"private address at another port", []string{"10.0.0.5:5432"}, nil, "10.0.0.5", 5433, nil, LocalAddress},
		{"name at its port", []string{"registry.test:443"}, nil, "registry.test", 443, []string{"198.51.100.10"}, 0},
		{"name at another port", []string{"registry.test:443"}, nil, "registry.test", 80, nil, Unlisted},
		{"wildcard at its port", []string{"*.registry.test:443"}, nil, "api.registry.test", 443, []string{"198.51.100.11"}, 0},
		{"wildcard at another port", []string{"*.registry.test:443"}, nil, "api.registry.test", 22, nil, Unlisted},
		{"deny of one port", []string{"registry.test"}, []string{"registry.test:25"}, "registry.test", 25, nil, Denied},
		{"deny of another port", []string{"registry.test"}, []string{"registry.test:25"}, "registry.test", 443, []string{"198.51.100.10"}, 0},
		{"deny of an address's port", []string{"127.0.0.1:5432"}, []string{"127.0.0.1:5432"}, "127.0.0.1", 5432, nil, Denied},
		{"v6 loopback at its port", []string{"[::1]:6379"}, nil, "::1", 6379, []string{"::1"}, 0},
		{"v6 loopback at another port", []string{"[::1]:6379"}, nil, "[::1]", 6380, nil, LocalAddress},
		{"localhost by name", []string{"localhost:8080"}, nil, "localhost", 8080, []string{"127.0.0.1", "::1"}, 0},
		{"localhost by name, another port", []string{"localhost:8080"}, nil, "localhost", 8081, nil, Unlisted},
		{"localhost's v4 address", []string{"localhost:8080"}, nil, "127.0.0.1", 8080, []string{"127.0.0.1"}, 0},
		{"localhost's v6 address", []string{"localhost:8080"}, nil, "::1", 8080, []string{"::1"}, 0},
		{"not localhost's other loopback", []string{"localhost:8080"}, nil, "127.0.0.2", 8080, nil, LocalAddress},
		{"a name rebinding onto a port rule", []string{"rebind.test", "127.0.0.1:443"}, nil, "rebind.test", 443, []string{"127.0.0.1"}, 0},
		{"a name rebinding onto another port", []string{"rebind.test", "127.0.0.1:443"}, nil, "rebind.test", 80, nil, LocalAddress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(&Options{Allow: tc.allow, Deny: tc.deny, Resolve: local, HostAddrs: func() []netip.Addr { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			addrs, ref := p.check(t.Context(), "s", tc.host, tc.port)
			var got []string
			for _, a := range addrs {
				got = append(got, a.String())
			}
			var why Reason
			if ref != nil {
				why = ref.Reason
			}
			if why != tc.why || !slices.Equal(got, tc.want) {
				t.Errorf("check(%q, %d) = %v, %v (%v); want %v, %v", tc.host, tc.port, got, why, ref, tc.want, tc.why)
			}
		})
	}
	for _, r := range []string{"x.com:", "x.com:0", "x.com:65536", "x.com:http", "x.com:080", "x.com:+80", "*:443", "10.0.0.0/8:22", "[::1]:", "[::1]x", "[fe80::1%eth0]:80"} {
		if err := CheckRules([]string{r}); err == nil {
			t.Errorf("rule %q: no error", r)
		}
	}
	if err := CheckRules([]string{"x.com:443", "*.x.com:443", "10.0.0.5:5432", "[::1]:6379", "localhost:8080", "[fd00::1]"}); err != nil {
		t.Error(err)
	}
	// The server's own port may be among what such a rule reaches.
	for r, want := range map[string]bool{"localhost:8080": true, "[::1]:6379": true, "10.0.0.5:5432": true, "localhost": false, "x.com:443": false} {
		if got := NamesAddresses([]string{r}); got != want {
			t.Errorf("NamesAddresses(%q) = %v, want %v", r, got, want)
		}
	}
}
