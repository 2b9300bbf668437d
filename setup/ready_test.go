package setup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
)

// TestReady: with the sandbox, Ready runs a command in a jail of its own
// and leaves nothing behind; once jails cannot start (their agent is
// gone), it says so. Without the sandbox it is always nil.
func TestReady(t *testing.T) {
	off, err := New(t.Context(), &Config{Sandbox: Sandbox{Mode: "off"}, Local: &local.Options{Cwd: t.TempDir()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if err := off.Ready(t.Context()); err != nil {
		t.Errorf("without the sandbox: %v", err)
	}

	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(t.TempDir(), "agent")
	if err := os.Link(self, agent); err != nil {
		t.Skipf("cannot link the test binary as the agent: %v", err)
	}
	s, err := New(t.Context(), &Config{Sandbox: Sandbox{Network: sandbox.NetworkOff, Agent: agent}, Local: &local.Options{Cwd: t.TempDir()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Sandboxed() {
		t.Skipf("no sandbox here: %s", s.Unsandboxed())
	}
	for range 2 {
		if err := s.Ready(t.Context()); err != nil {
			t.Errorf("Ready: %v", err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "dsh-ready-check-*")); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
	if err := os.Remove(agent); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(t.Context()); err == nil || !strings.HasPrefix(err.Error(), "the sandbox check: ") {
		t.Errorf("Ready with no agent to start: %v", err)
	}
}
