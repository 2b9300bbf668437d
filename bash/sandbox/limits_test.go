//go:build linux

package sandbox

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
)

// TestLimits: a session's memory hog is killed at its memory limit, and
// the result names the limit; its fork bomb stops at its process limit;
// another session works on meanwhile. The attacks are bounded (300 MB, 100
// processes) and the limits set low.
func TestLimits(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	e, err := newSandbox(t, &Options{Limits: Limits{Memory: 64 << 20, Pids: 32},
		Local: &local.Options{Cwd: ws, Grace: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.jails.limitsErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("limits unavailable under CI: %v", e.jails.limitsErr)
		}
		t.Skipf("limits unavailable here: %v", e.jails.limitsErr)
	}
	run := func(owner, cmd string, timeout time.Duration) bash.RunResult {
		t.Helper()
		ctx := context.Background()
		spec, err := e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: owner, Workspace: ws, Workdir: ws, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// tail keeps a line whole: /dev/zero has no newline.
	hog := run("alice", "head -c 300000000 /dev/zero | tail > /dev/null; echo after $?", 20*time.Second)
	if hog.Limit != "memory limit 64 MiB" || !strings.Contains(hog.Stdout.Text, "after 137") {
		t.Errorf("memory hog: limit %q, stdout %q, stderr %q", hog.Limit, hog.Stdout.Text, hog.Stderr.Text)
	}
	bomb := run("alice", "for i in $(seq 100); do sleep 10 & done", 2*time.Second)
	if !strings.Contains(bomb.Stderr.Text, "Resource temporarily unavailable") {
		t.Errorf("fork bomb: not stopped at the process limit: stderr %q", bomb.Stderr.Text)
	}
	if other := run("bob", "echo fine", 10*time.Second); other.Stdout.Text != "fine\n" || other.Limit != "" {
		t.Errorf("the other session: %+v", other)
	}
}
