package setup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/observe"
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

// TestReadyWarm: with a warm pool, Ready's jail is one of its own, never
// a warm one (a probe would drain the pool), and Ready says so when no
// warm jail is ready.
func TestReadyWarm(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a pool of jails needs root")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(t.TempDir(), "agent")
	if err := os.Link(self, agent); err != nil {
		t.Skipf("cannot link the test binary as the agent: %v", err)
	}
	starts := make(chan *observe.JailStart, 16)
	s, err := New(t.Context(), &Config{Sandbox: Sandbox{Mode: "jail", Warm: 1, Agent: agent}, Local: &local.Options{Cwd: t.TempDir()}},
		&Options{Observe: func(ev observe.Event) {
			if js, ok := ev.(*observe.JailStart); ok {
				starts <- js
			}
		}})
	if err != nil {
		t.Skipf("no pool of jails here: %v", err)
	}
	defer s.Close()
	for js := testwait.Recv(t, starts, "a jail's start"); js.Session != ""; js = testwait.Recv(t, starts, "a jail's start") {
	} // New's check, then the pool's
	if err := s.Ready(t.Context()); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if js := testwait.Recv(t, starts, "Ready's jail's start"); js.Pooled || js.Session == "" {
		t.Errorf("Ready's jail: %+v; want one started for it", js)
	}
	if ready, target := s.PoolStatus(); ready != 1 || target != 1 {
		t.Errorf("PoolStatus after Ready: %d, %d; want 1, 1", ready, target)
	}
}
