//go:build linux

package acpagent

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestEgressOption: with Options.Egress, the proxy asks the editor's user
// about a host it does not list, and its refusal waits for the session's
// next model request, in the words the command read.
func TestEgressOption(t *testing.T) {
	p, err := egress.New(&egress.Options{RefusalText: func(r *egress.Refusal) string { return "refused " + r.Host }})
	if err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, rigOptions{egress: p})
	sid := r.newSession(t, t.TempDir())
	r.client.SetAnswer(func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(rejectOnce)}
	})
	if status := refusedConnect(t, p, string(sid), "unlisted.invalid:443"); !strings.HasPrefix(status, "HTTP/1.1 403") {
		t.Errorf("CONNECT: %q, want 403", status)
	}
	if n := len(r.client.Asked()); n != 1 {
		t.Errorf("asked %d times, want once", n)
	}
	want := []string{"[sandbox network: connections refused by the proxy]\nrefused unlisted.invalid"}
	if got := r.agent.tb.TakeNotices(string(sid), 0); !slices.Equal(got, want) {
		t.Errorf("notices %q, want %q", got, want)
	}
}

// refusedConnect asks p, as owner, for a tunnel to dest, and returns the
// status line of its answer; p is closed with the test.
func refusedConnect(t *testing.T, p *egress.Proxy, owner, dest string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l, owner) }()
	t.Cleanup(func() { p.Close(); <-served })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	status, err := testwait.Reply("the proxy's answer", func(context.Context) (string, error) {
		return bufio.NewReader(c).ReadString('\n')
	})
	if err != nil {
		t.Fatal(err)
	}
	return status
}
