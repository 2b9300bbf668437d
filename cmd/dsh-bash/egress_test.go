//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/acptest"
	"github.com/dshgo/dsh/internal/fakellm"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostServer is a server on the host's loopback, which a jail with the
// network allowlist reaches through the proxy by the name localhost
// (which no rule lists, so the user is asked) resolving to 127.0.0.1
// (which allowlistFlags' --allow-domain 127.0.0.1:PORT lets through at
// its port). curl is told to use the proxy for localhost too (--noproxy
// ”), which NO_PROXY otherwise keeps in the jail's own loopback, where
// the rule forwards the port unasked.
func hostServer(t *testing.T) (url, port string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from the host")
	}))
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return "http://localhost:" + port + "/", port
}

// allowlistFlags are a jail's with the allowlist, which allows the
// host's 127.0.0.1 at port alone.
func allowlistFlags(port string) []string {
	return []string{"--sandbox=jail", "--sandbox-network=allowlist", "--allow-domain", "127.0.0.1:" + port, "--default-domains=false"}
}

// TestMCPNetworkAllowlist: a jailed command's connection to an unlisted
// host is put to the user by elicitation (before the 2026-07-28
// protocol), once for the session when the user allows it for the
// session; a client that cannot be asked has it refused, and the model
// reads why and how the user can allow it.
func TestMCPNetworkAllowlist(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	url, port := hostServer(t)
	curl := map[string]any{"command": "curl --noproxy '' -sS " + url, "description": "Fetch"}
	t.Run("asked", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var asked []string
		client := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "Allow this host for the session"}}, nil
			}})
		cmd := execCommand(append([]string{"mcp"}, allowlistFlags(port)...)...)
		cs, err := testwait.Reply("initialize", func(ctx context.Context) (*mcp.ClientSession, error) {
			// The 2025-11-25 protocol: on 2026-07-28 a server asks only in a
			// call's answer, and a connection may come from a background task.
			return client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		})
		if err != nil {
			t.Fatal(err)
		}
		defer closeMCP(t, cs, cmd)
		for i := range 2 {
			if got := callText(t, cs, "bash", curl); got != "hello from the host\n" {
				t.Errorf("call %d: %q", i, got)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != 1 || !strings.Contains(asked[0], "wants to connect to localhost:") {
			t.Errorf("elicitations: %q, want one about localhost", asked)
		}
	})
	t.Run("cannot ask", func(t *testing.T) {
		t.Parallel()
		sock := filepath.Join(t.TempDir(), "metrics.sock")
		cs, _ := mcpClient(t, append(allowlistFlags(port), "--metrics", "unix:"+sock)...)
		got := callText(t, cs, "bash", curl)
		want := "is not on the network allowlist, and the user could not be asked; the connection is refused. The user can allow it: restart dsh-bash with --allow-domain localhost"
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want it to say %q", got, want)
		}
		// Through a CONNECT tunnel the client shows only the status: the
		// reason comes beside the result.
		got = callText(t, cs, "bash", map[string]any{"command": "curl --noproxy '' -sS https" + strings.TrimPrefix(url, "http"), "description": "Fetch"})
		if !strings.Contains(got, "CONNECT tunnel failed, response 403") || !strings.Contains(got, "[sandbox network: connections refused by the proxy]\ndsh sandbox: localhost:") {
			t.Errorf("a refused CONNECT: %q, want curl's error and the note", got)
		}
		// The proxy's decisions are the operators' metrics.
		if m := scrapeUnix(t, sock); !strings.Contains(m, `dsh_bash_network_decisions_total{asked="false",verdict="deny"} 2`) {
			t.Errorf("the metrics do not count the two refusals:\n%s", m)
		}
	})
}

// TestACPNetworkAllowlist: through ACP, the question is a permission
// request on a card of its own, asked even under --yolo (which answers
// the commands' permissions, not the sandbox's network).
func TestACPNetworkAllowlist(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	url, port := hostServer(t)
	call := func(id string) fakellm.Turn {
		return fakellm.Turn{Calls: []fakellm.Call{{ID: id, Name: "bash", Args: map[string]any{"command": "curl --noproxy '' -sS " + url, "description": "Fetch"}}}}
	}
	refused := fakellm.Turn{Calls: []fakellm.Call{{ID: "c3", Name: "bash", Args: map[string]any{
		"command": "curl -sS https://127.0.0.2:9/", "description": "Fetch another loopback address"}}}}
	model := fakellm.New(t, call("c1"), call("c2"), refused, fakellm.Turn{Text: "done"})
	ed := acptest.New()
	ed.SetAnswer(func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected("allow-always")}
	})
	promptACP(t, ed, append([]string{"acp", "--model", "m", "--base-url", model.URL, "--yolo"}, allowlistFlags(port)...)...)
	asked := ed.Asked()
	if len(asked) != 1 || asked[0].ToolCall.Title == nil || !strings.HasPrefix(*asked[0].ToolCall.Title, "Network: connect to localhost:") {
		t.Fatalf("permission requests: %+v, want one for the network; the model read %q", asked, model.Request(1).MessageTexts())
	}
	for i := 1; i <= 2; i++ {
		if got := model.Request(i).MessageTexts(); !strings.Contains(strings.Join(got, "\n"), "hello from the host") {
			t.Errorf("the model's request %d: %q, want the page", i, got)
		}
	}
	// A refused CONNECT shows only as curl's "response 403": the reason
	// comes in the model's next request.
	// In this agent's voice, never the user's: it names what a command
	// chose.
	want := "system: [sandbox network: connections refused by the proxy]\ndsh sandbox: the connection to 127.0.0.2:9 is refused: it is 127.0.0.2, a loopback"
	if got := strings.Join(model.Request(3).MessageTexts(), "\n"); !strings.Contains(got, want) || strings.Contains(got, "user: [sandbox network") {
		t.Errorf("the model's last request: %q, want %q", got, want)
	}
}

// TestTerminalNetAsker: run's question on the terminal reads the user's
// answer, and gives up when its context ends (the command ended, dsh-bash
// exits) instead of holding the proxy's Close until a line comes.
func TestTerminalNetAsker(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	var out strings.Builder
	ask := networkAsker(newPrompter(r, &out))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	done := make(chan error, 1)
	go func() { _, err := ask(ctx, egress.Question{Host: "example.org", Port: 443}); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a question whose context ended was answered")
		}
	case <-time.After(testwait.Limit):
		t.Fatal("a question whose context ended still waits for a line")
	}
	go fmt.Fprintln(w, "s")
	d, err := ask(t.Context(), egress.Question{Host: "example.org", Port: 443})
	if err != nil || d != egress.AllowSession {
		t.Errorf("answer s: %v, %v; want AllowSession", d, err)
	}
}
