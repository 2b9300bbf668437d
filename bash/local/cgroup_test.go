//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
)

// cgroupExec makes a cgroup-contained executor, or fails (in CI) or returns
// nil (elsewhere) where cgroups are unavailable.
func cgroupExec(t *testing.T, o *Options) *Executor {
	t.Helper()
	if err := cgroupsUsable(); err != nil {
		noCgroups(t, err)
		return nil
	}
	if o == nil {
		o = &Options{}
	}
	o.Containment = ContainCgroup
	return newExec(t, o)
}

// leafOf is a shell expression for the cgroup directory of the shell that
// evaluates it, found from /proc/self/cgroup and the cgroup2 mount.
func leafOf(t *testing.T) string {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseCgroup2Mount(string(mi))
	if err != nil {
		t.Fatal(err)
	}
	if m.root != "/" {
		t.Fatalf("the cgroup2 mount shows only %s: this test needs all of it", m.root)
	}
	return fmt.Sprintf(`%q"$(sed -n 's/^0:://p' /proc/$$/cgroup)"`, m.point)
}

// TestOwnLeafKilled: a command kills its own cgroup through cgroup.kill;
// every later command still runs (a once-killed cgroup kills every process
// later cloned into it, so it must never be used again).
func TestOwnLeafKilled(t *testing.T) {
	t.Parallel()
	e := cgroupExec(t, nil)
	if e == nil {
		return
	}
	res := runCmd(t, e, "echo 1 > "+leafOf(t)+"/cgroup.kill; echo survived")
	if res.Signal != "SIGKILL" || strings.Contains(res.Stdout.Text, "survived") {
		t.Fatalf("setup: the command did not kill itself: %+v", res)
	}
	for i := range 8 {
		if res := runCmd(t, e, fmt.Sprintf("echo run %d; exit 7", i)); res.ExitCode != 7 || res.Signal != "" || res.Stdout.Text != fmt.Sprintf("run %d\n", i) {
			t.Fatalf("run %d after the kill: exit %d signal %q stdout %q", i, res.ExitCode, res.Signal, res.Stdout.Text)
		}
	}
}

// TestOtherLeafKilled: a command kills a background task's cgroup; that
// task dies, and the executor goes on working, in the foreground and the
// background.
func TestOtherLeafKilled(t *testing.T) {
	t.Parallel()
	e := cgroupExec(t, nil)
	if e == nil {
		return
	}
	l := listen(e)
	where := filepath.Join(t.TempDir(), "where")
	sp := newSyncPoint(t)
	victim := start(t, e, "echo "+leafOf(t)+" > "+where+"; echo > "+sp.fifo+"; sleep 30", "alice")
	sp.reached(t)
	res := runCmd(t, e, "echo 1 > \"$(cat "+where+")/cgroup.kill\" && echo done")
	if res.Stdout.Text != "done\n" || res.ExitCode != 0 {
		t.Fatalf("the killer failed: %+v", res)
	}
	if got := l.wait(t, victim.ID); got.Status != bash.StatusKilled || got.Signal != "SIGKILL" {
		t.Errorf("the victim ended as %+v", got)
	}
	for i := range 4 {
		if res := runCmd(t, e, fmt.Sprintf("echo run %d; exit 7", i)); res.ExitCode != 7 || res.Signal != "" {
			t.Errorf("run %d after the kill: exit %d signal %q stdout %q", i, res.ExitCode, res.Signal, res.Stdout.Text)
		}
	}
	bornAndKilled(t, e, 4) // takes the killed leaf too, if it was kept
}

// TestIdleLeavesKilled: a command writes to the cgroup.kill of every leaf
// the executor keeps for reuse (it can: they are under the executor's
// cgroup directory); every later command still runs, even when more leaves
// were poisoned than a spawn would try.
func TestIdleLeavesKilled(t *testing.T) {
	t.Parallel()
	e := cgroupExec(t, nil)
	if e == nil {
		return
	}
	// Leaves free leaves behind: 7, or fewer where one still held a
	// process when its task ended (under load), which is dropped.
	bornAndKilled(t, e, 7)
	dir := e.cont.(*cgroupContainment).dir
	// The poisoner stays, so that its own leaf is not reused first.
	poisoner := start(t, e, fmt.Sprintf(`own=%s; n=0
for f in %q/c*/cgroup.kill; do [ "$f" = "$own/cgroup.kill" ] || { echo 1 > "$f"; n=$((n+1)); }; done; echo poisoned $n; exec sleep 30`, leafOf(t), dir), "")
	// More than a spawn tries (three leaves: see startShellRetrying).
	var n int
	out, _ := readUntil(t, e, poisoner.ID, "\n")
	if _, err := fmt.Sscanf(out, "poisoned %d", &n); err != nil || n < 4 {
		t.Fatalf("the poisoner: %q; want at least 4 leaves poisoned", out)
	}
	for i := range 4 {
		if res := runCmd(t, e, fmt.Sprintf("echo run %d; exit 7", i)); res.ExitCode != 7 || res.Signal != "" {
			t.Errorf("run %d after the kill: exit %d signal %q stdout %q", i, res.ExitCode, res.Signal, res.Stdout.Text)
		}
	}
	bornAndKilled(t, e, 6)
}

// bornAndKilled runs n background commands at once (so that they take every
// free leaf), kills them, and checks that each was running until then: it
// ends by our SIGTERM, not by a SIGKILL at birth.
func bornAndKilled(t *testing.T, e *Executor, n int) {
	t.Helper()
	var tasks []bash.Task
	for range n {
		tasks = append(tasks, start(t, e, "sleep 30", "alice"))
	}
	for _, tk := range tasks {
		if _, err := e.Kill(context.Background(), tk.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.Get(context.Background(), tk.ID); got.Signal != "SIGTERM" {
			t.Errorf("background task %s ended as %+v; want killed by our SIGTERM", tk.ID, got)
		}
	}
}
