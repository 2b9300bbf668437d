//go:build linux

package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
)

// TestEmbedding is the README's embedding example: the tools over a
// sandbox, as an embedding program makes them. Its main calls
// sandbox.Main() first thing (this test binary's TestMain does): each
// jail's agent is the running binary, started again.
func TestEmbedding(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("no bwrap")
	}
	ctx := context.Background()
	ws := t.TempDir()

	se, err := sandbox.New(ctx, &sandbox.Options{
		Policy: sandbox.Policy{Network: sandbox.NetworkOff},
		Local:  &local.Options{Cwd: ws},
	})
	if err != nil {
		t.Fatal(err) // sandbox.ErrUnavailable where no layer works here
	}
	defer se.Close() // kills every task, ends every jail
	tb := toolbash.New(se, &toolbash.Options{Sandbox: &toolbash.SandboxFacts{NetworkOff: true}})
	defer tb.Close()
	var reg tools.Registry
	if err := tb.Register(&reg); err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(ctx, &tools.Call{
		Tool:    "bash",
		Args:    []byte(`{"command": "touch made && touch /etc/nope", "description": "Write inside and outside"}`),
		Session: session.Session{ID: "session-1", Cwd: ws},
	})
	tb.EndSession(ctx, "session-1") // its tasks die, and its jail with them

	want := "[stderr]\ntouch: cannot touch '/etc/nope': Read-only file system\n[exit code: 1]"
	if res.Text() != want {
		t.Errorf("got %q, want %q", res.Text(), want)
	}
	if _, err := os.Stat(ws + "/made"); err != nil {
		t.Error(err)
	}
}
