//go:build linux

package acpagent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/coder/acp-go-sdk"

	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/toolbash"
)

// TestPermissionRules: with rules, an allowed command runs without asking,
// a denied one never runs and the model reads the rule, and the rest are
// asked about with session/request_permission, offering to always allow
// the command's prefix in the session.
func TestPermissionRules(t *testing.T) {
	dir := t.TempDir()
	allow, _ := permission.NewRules(permission.Allow, "test", "echo")
	deny, _ := permission.NewRules(permission.Deny, "test", "rm")
	p := &permission.Policy{Unmatched: permission.Ask, Rules: append(allow, deny...)}
	r := newRigWith(t, rigOptions{permissions: &toolbash.GateOptions{Policy: p}},
		fakellm.Turn{Calls: []fakellm.Call{
			bashCall("c1", "echo hi"), bashCall("c2", "rm -rf "+dir),
			bashCall("c3", "mkdir "+dir+"/a"), bashCall("c4", "mkdir "+dir+"/b"),
		}}, fakellm.Turn{Text: "ok"})
	r.client.SetAnswer(func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(allowAlways)}
	})
	sid := r.newSession(t, dir)
	r.prompt(t, sid, "go")
	asked := r.client.Asked()
	if len(asked) != 1 || asked[0].ToolCall.ToolCallId != "c3" || len(asked[0].Options) != 3 ||
		asked[0].Options[1].Name != "Always allow `mkdir` in this session" {
		t.Fatalf("asked %+v; want once, about c3, offering to always allow mkdir", asked)
	}
	msgs := r.model.Request(1).MessageTexts()
	want := []string{
		"tool: hi\n",
		"tool: permission denied: `rm -rf " + dir + "` matches rule deny \"rm\" (test). The command did not run; do not try to get around the rule. If the command is needed, ask the user.",
		"tool: (no output)", "tool: (no output)",
	}
	if got := msgs[len(msgs)-4:]; !slices.Equal(got, want) {
		t.Errorf("the model saw %q\nwant %q", got, want)
	}
	for _, d := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
