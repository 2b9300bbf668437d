//go:build linux

package acpagent

import (
	"slices"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/egresstest"
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
	if status := egresstest.Connect(t, p, string(sid), "unlisted.invalid:443"); !strings.HasPrefix(status, "HTTP/1.1 403") {
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
