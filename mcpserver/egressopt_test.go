//go:build linux

package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshgo/dsh/egress"
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
	if status := refusedConnect(t, p, r.ownerOf(t, cs), "unlisted.invalid:443"); !strings.HasPrefix(status, "HTTP/1.1 403") {
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
