package egress

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDenyStarAddresses: a deny rule of "*" refuses an address literal
// too (a command that cannot reach names must not reach the same hosts by
// their addresses), whatever allows it: "*", an address rule, or the
// user, who is not asked.
func TestDenyStarAddresses(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	yes := func(context.Context, Question) (Decision, error) { asked.Add(1); return AllowSession, nil }
	for _, tc := range []struct {
		name  string
		allow []string
		host  string
	}{
		{"v4 under allow *", []string{"*"}, "93.184.216.34"},
		{"v6 under allow *", []string{"*"}, "2606:2800:220:1:248:1893:25c8:1946"},
		{"bracketed v6 under allow *", []string{"*"}, "[2606:2800:220:1:248:1893:25c8:1946]"},
		{"mapped v4 under allow *", []string{"*"}, "::ffff:93.184.216.34"},
		{"v4 an address rule allows", []string{"93.184.216.34"}, "93.184.216.34"},
		{"v6 a range allows", []string{"2606:2800::/32"}, "[2606:2800:220:1:248:1893:25c8:1946]"},
		{"loopback an address rule allows", []string{"127.0.0.1"}, "127.0.0.1"},
		{"v4 the user would allow", nil, "93.184.216.34"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(&Options{Allow: tc.allow, Deny: []string{"*"}, Resolve: resolveFake, Ask: yes})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			addrs, ref := p.check(t.Context(), "s", tc.host, 443)
			if ref == nil || ref.Reason != Denied || ref.Rule != "*" {
				t.Errorf("check(%q) = %v, %v; want refused by the deny rule *", tc.host, addrs, ref)
			}
		})
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the user was asked %d times; a denied destination is never asked about", n)
	}
	t.Run("curl", func(t *testing.T) {
		u := newUpstream(t)
		proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}, Deny: []string{"*"}})
		out, _ := curl(t, "-x", "http://"+proxy, "http://127.0.0.1:"+u.port(false)+"/hello")
		if want := `denied by rule "*"`; !strings.Contains(out, want) || u.hits.Load() != 0 {
			t.Errorf("curl to an allowed address under deny *: %q, %d requests upstream; want %q and none", out, u.hits.Load(), want)
		}
	})
}
