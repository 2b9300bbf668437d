package setup

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/dshgo/dsh/bash/sandbox"
)

// TestJailForwards: each jail listens at the address the rule names (for
// localhost, at 127.0.0.1 and at ::1, which a jail without IPv6 may go
// without), and the host tries that same address first.
func TestJailForwards(t *testing.T) {
	s := &Setup{cfg: Config{Sandbox: Sandbox{NoDefaultDomains: true, AllowDomains: []string{"example.com", "127.0.0.1:5432", "localhost:8080"}}}}
	got, err := s.jailForwards()
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort
	want := []sandbox.Forward{
		{Listen: ap("127.0.0.1:5432"), To: []netip.AddrPort{ap("127.0.0.1:5432")}},
		{Listen: ap("127.0.0.1:8080"), To: []netip.AddrPort{ap("127.0.0.1:8080"), ap("[::1]:8080")}},
		{Listen: ap("[::1]:8080"), To: []netip.AddrPort{ap("[::1]:8080"), ap("127.0.0.1:8080")}, Optional: true},
	}
	if !slices.EqualFunc(got, want, func(a, b sandbox.Forward) bool {
		return a.Listen == b.Listen && a.Optional == b.Optional && slices.Equal(a.To, b.To)
	}) {
		t.Errorf("jailForwards = %+v, want %+v", got, want)
	}
	if f := s.Forwarded(); !slices.Equal(f, []string{"127.0.0.1:5432", "localhost:8080"}) {
		t.Errorf("forwarded = %q", f)
	}
}
