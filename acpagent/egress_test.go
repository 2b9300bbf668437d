//go:build linux

package acpagent

import (
	"context"
	"errors"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash"
)

// TestAskEgress: each answer of the editor's user to a network question
// is the proxy's decision; a cancelled question is no answer
// (toolbash.ErrNoAnswer: the proxy remembers nothing of it); Yolo answers
// none of them; a session that is gone cannot be asked.
func TestAskEgress(t *testing.T) {
	r := newRigWith(t, rigOptions{yolo: true})
	sid := r.newSession(t, t.TempDir())
	for _, c := range []struct {
		outcome acp.RequestPermissionOutcome
		want    egress.Decision
		err     error
	}{
		{acp.NewRequestPermissionOutcomeSelected(allowOnce), egress.AllowOnce, nil},
		{acp.NewRequestPermissionOutcomeSelected(allowAlways), egress.AllowSession, nil},
		{acp.NewRequestPermissionOutcomeSelected(rejectOnce), egress.Deny, nil},
		{acp.NewRequestPermissionOutcomeSelected(rejectAllNew), egress.DenyAllNew, nil},
		{acp.NewRequestPermissionOutcomeCancelled(), egress.Deny, toolbash.ErrNoAnswer},
	} {
		r.client.SetAnswer(func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
			return acp.RequestPermissionResponse{Outcome: c.outcome}
		})
		before := len(r.client.Asked())
		d, err := testwait.Reply("AskEgress", func(ctx context.Context) (egress.Decision, error) {
			return r.agent.AskEgress(ctx, egress.Question{Owner: string(sid), Host: "example.org", Port: 443})
		})
		if !errors.Is(err, c.err) || d != c.want || len(r.client.Asked()) != before+1 {
			t.Errorf("outcome %+v: %v, %v (asked %d times); want %v, asked once", c.outcome, d, err, len(r.client.Asked())-before, c.want)
		}
	}
	if _, err := r.agent.AskEgress(context.Background(), egress.Question{Owner: "gone", Host: "example.org", Port: 443}); !errors.Is(err, toolbash.ErrCannotAsk) {
		t.Errorf("a session that is gone: %v, want ErrCannotAsk", err)
	}
}
