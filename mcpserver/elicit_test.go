//go:build linux

package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/toolbash"
)

// permissionRig is a server whose rules allow echo and deny rm; anything
// else is asked about.
func permissionRig(t *testing.T, versions ...string) *rig {
	return newRig(t, permissionOptions(versions))
}

// permissionOptions are permissionRig's.
func permissionOptions(versions []string) *Options {
	allow, _ := permission.NewRules(permission.Allow, "test", "echo")
	deny, _ := permission.NewRules(permission.Deny, "test", "rm")
	p := &permission.Policy{Unmatched: permission.Ask, Rules: append(allow, deny...)}
	return &Options{SupportedProtocolVersions: versions, Permissions: &toolbash.GateOptions{Policy: p,
		HowToAllow: func(prefix string) string { return "--allow '" + prefix + "'" }}}
}

// TestElicitPermission: a client that declared elicitation is asked, with
// a form, about a command no rule allows (as an input request of the call
// on the current protocol, by an elicitation within the call on older
// ones); its answers hold: "always" for the session's later calls of that
// prefix, "reject" stops the command.
func TestElicitPermission(t *testing.T) {
	t.Run("current", func(t *testing.T) { testElicitPermission(t, permissionRig(t)) })
	t.Run("legacy", func(t *testing.T) { testElicitPermission(t, permissionRig(t, legacy)) })
}

func testElicitPermission(t *testing.T, r *rig) {
	var mu sync.Mutex
	var asked []string
	answer := choiceAlways
	cs := r.connect(t, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": answer}}, nil
		}}, r.cwd)
	if res := call(t, cs, "bash", bashArgs("mkdir a")); res.IsError {
		t.Fatalf("allowed by the user: %s", text(res))
	}
	if res := call(t, cs, "bash", bashArgs("mkdir b")); res.IsError || len(asked) != 1 {
		t.Errorf("the allowed prefix: %s; asked %d times", text(res), len(asked))
	}
	if !strings.Contains(asked[0], "no rule allows `mkdir a`") || !strings.Contains(asked[0], "mkdir a") {
		t.Errorf("the question: %q", asked[0])
	}
	answer = choiceReject
	if res := call(t, cs, "bash", bashArgs("touch c")); !res.IsError || text(res) != toolbash.RejectedText {
		t.Errorf("rejected: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(r.cwd, "c")); err == nil {
		t.Error("a rejected command ran")
	}
	if res := call(t, cs, "bash", bashArgs("rm -rf a")); !res.IsError || !strings.HasPrefix(text(res), "permission denied: `rm -rf a` matches rule deny \"rm\"") || len(asked) != 2 {
		t.Errorf("denied (without asking): %s", text(res))
	}
}

// TestPermissionWithoutElicitation: a client that cannot be asked gets a
// denial that says how to add a rule, and the command does not run.
func TestPermissionWithoutElicitation(t *testing.T) {
	r := permissionRig(t)
	cs := r.connect(t, nil, r.cwd)
	res := call(t, cs, "bash", bashArgs("mkdir made"))
	want := "this command needs the user's approval (no rule allows `mkdir made`), and this client cannot ask the user; it did not run. The user can allow it with a rule: --allow 'mkdir'."
	if !res.IsError || text(res) != want {
		t.Errorf("got %q\nwant %q", text(res), want)
	}
	if _, err := os.Stat(filepath.Join(r.cwd, "made")); err == nil {
		t.Error("the command ran")
	}
	if res := call(t, cs, "bash", bashArgs("echo ok")); res.IsError || text(res) != "ok\n" {
		t.Errorf("an allowed command: %q", text(res))
	}
}

// TestElicitUnsandboxed: a call that asks to run outside the sandbox is
// asked about by a form of its own, every time (with the permission
// question in the same round where both are needed, on the current
// protocol); "reject" stops it; a client that cannot be asked has it
// refused; the argument is in the schema.
func TestElicitUnsandboxed(t *testing.T) {
	for _, v := range []string{"", legacy} {
		t.Run(map[string]string{"": "current", legacy: "legacy"}[v], func(t *testing.T) {
			o := permissionOptions(nil)
			if v != "" {
				o.SupportedProtocolVersions = []string{v}
			}
			o.Unsandboxed = true
			r := newRig(t, o)
			var mu sync.Mutex
			var outside, perms int
			var questions []string
			answer := choiceOutside
			cs := r.connect(t, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					if strings.Contains(req.Params.Message, "OUTSIDE the sandbox") {
						outside++
						questions = append(questions, req.Params.Message)
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": answer}}, nil
					}
					perms++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": choiceOnce}}, nil
				}}, r.cwd)
			for _, dir := range []string{"a", "b"} {
				if res := call(t, cs, "bash", bashArgs("mkdir "+dir, "unsandboxed", true)); res.IsError {
					t.Fatalf("allowed: %s", text(res))
				}
			}
			if outside != 2 || perms != 2 {
				t.Errorf("asked %d times to run outside, %d times to run: want each twice", outside, perms)
			}
			if !strings.Contains(questions[0], "mkdir a") || !strings.Contains(questions[1], "mkdir b") {
				t.Errorf("the questions do not show the command: %q", questions)
			}
			// A deny rule holds: the call is refused before anyone is asked.
			planted := filepath.Join(r.cwd, "planted")
			if err := os.WriteFile(planted, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if res := call(t, cs, "bash", bashArgs("rm "+planted, "unsandboxed", true)); !res.IsError || !strings.HasPrefix(text(res), "permission denied") || outside != 2 {
				t.Errorf("a denied command asking to run outside: %s (asked %d times)", text(res), outside)
			}
			if _, err := os.Stat(planted); err != nil {
				t.Errorf("the denied command ran: %v", err)
			}
			answer = choiceReject
			if res := call(t, cs, "bash", bashArgs("echo hi", "unsandboxed", true)); !res.IsError || text(res) != toolbash.UnsandboxedDeclinedText {
				t.Errorf("rejected: %s", text(res))
			}
			mute := r.connect(t, nil, r.cwd)
			if res := call(t, mute, "bash", bashArgs("echo hi", "unsandboxed", true)); !res.IsError || !strings.Contains(text(res), "this client cannot ask the user") {
				t.Errorf("a client that cannot be asked: %s", text(res))
			}
		})
	}
}
