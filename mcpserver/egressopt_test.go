//go:build linux

package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/egresstest"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestEgressOption: with Options.Egress, the proxy asks the server's
// user about a host it does not list, and its refusal reaches the
// session's model beside the next tool result, in the words the command
// read.
func TestEgressOption(t *testing.T) {
	p, err := egress.New(&egress.Options{RefusalText: func(r *egress.Refusal) string { return "refused " + r.Host }})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, &Options{SupportedProtocolVersions: []string{legacy}, Egress: p})
	asked := make(chan string, 1)
	cs := r.connect(t, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": netDeny}}, nil
		},
	}, r.cwd)
	call(t, cs, "bash", bashArgs("true")) // the server knows the session from its first call
	if status := egresstest.Connect(t, p, r.ownerOf(t, cs), "unlisted.invalid:443"); !strings.HasPrefix(status, "HTTP/1.1 403") {
		t.Errorf("CONNECT: %q, want 403", status)
	}
	if q := testwait.Recv(t, asked, "the question"); !strings.Contains(q, "unlisted.invalid:443") {
		t.Errorf("asked %q", q)
	}
	got := texts(call(t, cs, "bash", bashArgs("true")))
	want := "\n\n[sandbox network: connections refused by the proxy]\nrefused unlisted.invalid"
	if len(got) != 2 || got[1] != want {
		t.Errorf("the next result: %q, want the refusal after it", got)
	}
}
