package egress

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dshgo/dsh/observe"
)

// TestObserve: each connection is one decision told to Options.Observe:
// allowed by a rule (named), refused by one, asked about and allowed or
// declined, refused where nobody could be asked (not asked, then); a connection allowed that then fails to connect is no second
// decision. Events name the session, never its owner token.
func TestObserve(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	var mu sync.Mutex
	var got []*observe.Network
	ask := func(_ context.Context, q Question) (Decision, error) {
		switch q.Host {
		case "asked.test":
			return AllowOnce, nil
		case "unasked.test":
			return Deny, errors.New("this client cannot ask")
		}
		return Deny, nil
	}
	proxy, _ := startProxy(t, Options{Allow: []string{"registry.test", "127.0.0.1"}, Deny: []string{"evil.test"}, Ask: ask,
		Observe: func(e observe.Event) { mu.Lock(); got = append(got, e.(*observe.Network)); mu.Unlock() }})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, deadPort, _ := net.SplitHostPort(closed.Addr().String())
	closed.Close()
	port := u.port(false)
	tests := []struct {
		dest, verdict, rule, reason string
		asked                       bool
	}{
		{"registry.test:" + port, "allow", "registry.test", "", false},
		{"evil.test:" + port, "deny", "evil.test", `egress: evil.test:` + port + ` denied by rule "evil.test"`, false},
		{"asked.test:" + port, "allow", "", "", true},
		{"declined.test:" + port, "deny", "", "egress: the user declined declined.test:" + port, true},
		{"unasked.test:" + port, "deny", "", "egress: unasked.test:" + port + " is not in the allowlist", false},
		{"registry.test:" + deadPort, "allow", "registry.test", "", false},
	}
	for _, tc := range tests {
		c, _ := dialTunnel(t, proxy, tc.dest)
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(tests) {
		t.Fatalf("%d decisions told, want %d: %+v", len(got), len(tests), got)
	}
	for i, tc := range tests {
		e := got[i]
		host, p, _ := net.SplitHostPort(tc.dest)
		if e.Session != observe.SessionName("s1") || e.Host != host || p != strconv.Itoa(e.Port) || e.Verdict != tc.verdict ||
			e.Rule != tc.rule || e.Reason != tc.reason || e.Asked != tc.asked || e.Time.IsZero() {
			t.Errorf("%s: %+v; want %s, rule %q, reason %q, asked %v", tc.dest, e, tc.verdict, tc.rule, tc.reason, tc.asked)
		}
		if strings.Contains(e.Session, "s1") {
			t.Errorf("the session's name %q holds its owner token", e.Session)
		}
	}
}
