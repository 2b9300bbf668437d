package toolbash

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/dshgo/dsh/egress"
)

// TestEgressGolden: what a command (and the model, beside the result)
// reads when the network proxy refuses a connection, for each reason.
func TestEgressGolden(t *testing.T) {
	how := func(host string) string { return "--allow-domain " + host }
	cases := []struct {
		name string
		r    egress.Refusal
	}{
		{"denied", egress.Refusal{Owner: "s", Host: "gist.github.com", Port: 443, Reason: egress.Denied, Rule: "gist.github.com"}},
		{"unlisted", egress.Refusal{Owner: "s", Host: "example.org", Port: 443, Reason: egress.Unlisted}},
		{"declined", egress.Refusal{Owner: "s", Host: "example.org", Port: 80, Reason: egress.Declined}},
		{"local-address", egress.Refusal{Owner: "s", Host: "169.254.169.254", Port: 80, Reason: egress.LocalAddress, Addr: netip.MustParseAddr("169.254.169.254")}},
		{"rebinding", egress.Refusal{Owner: "s", Host: "rebind.example", Port: 443, Reason: egress.LocalAddress, Addr: netip.MustParseAddr("127.0.0.1")}},
		{"loopback", egress.Refusal{Owner: "s", Host: "::1", Port: 5432, Reason: egress.LocalAddress, Addr: netip.MustParseAddr("::1")}},
		{"unlisted-localhost", egress.Refusal{Owner: "s", Host: "localhost", Port: 8080, Reason: egress.Unlisted}},
		{"unreachable", egress.Refusal{Owner: "s", Host: "down.example", Port: 443, Reason: egress.Unreachable, Err: errors.New("dial tcp 192.0.2.1:443: connect: connection refused")}},
		{"busy", egress.Refusal{Owner: "s", Host: "example.org", Port: 443, Reason: egress.Busy, Max: 512}},
		{"malformed", egress.Refusal{Owner: "s", Reason: egress.Malformed, Err: errors.New("malformed HTTP request \"\\x16\\x03\"")}},
	}
	got := map[string]string{}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
		got[c.name] = EgressRefusal(&c.r, how)
	}
	names = append(names, "unlisted-no-how", "notices")
	got["unlisted-no-how"] = EgressRefusal(&cases[1].r, nil)
	var tb Tools
	for _, c := range cases {
		tb.EgressRefused(&c.r, how)
	}
	tb.EgressRefused(&cases[0].r, how) // the same refusal again: once
	got["notices"] = NetworkNoticeBlock(tb.TakeNetworkNotices("s"))
	golden(t, "egress.txtar", names, got)
	if n := tb.TakeNetworkNotices("s"); len(n) != 0 {
		t.Errorf("notices taken twice: %q", n)
	}
}
