//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/testwait"
	"golang.org/x/sys/unix"
)

// TestLimits: a session's memory hog is killed at its memory limit, and
// the result names the limit; its fork bomb stops at its process limit;
// filling its /tmp stops at the /tmp's size; another session works on
// meanwhile. The attacks are bounded (300 MB, 100 processes, 20 MB) and the
// limits set low.
func TestLimits(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	e, err := newSandbox(t, &Options{Limits: Limits{Memory: 64 << 20, Pids: 32, Tmp: 8 << 20},
		Local: &local.Options{Cwd: ws, Grace: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	skipWithoutLimits(t, e)
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
	full := run("alice", "head -c 20000000 /dev/zero > /tmp/big; echo $?; du -m /tmp/big", 10*time.Second)
	if !strings.Contains(full.Stderr.Text, "No space left on device") || !strings.HasPrefix(full.Stdout.Text, "1\n8\t") {
		t.Errorf("filling /tmp: not stopped at its size: stdout %q, stderr %q", full.Stdout.Text, full.Stderr.Text)
	}
	// Each session's processes share one CPU weight: they are in its cpu
	// cgroup (where the host has the v1 cpu hierarchy).
	if v1Mounted(t, "cpu") {
		if e.jails.limits.dirs[ctlCPU] == "" {
			t.Fatal("the host has a v1 cpu hierarchy, and the jails have no cgroup there")
		}
		cg := run("alice", "grep -E '^[0-9]+:([a-z,]*,)?cpu(,[a-z,]*)?:' /proc/self/cgroup", 10*time.Second)
		if want := filepath.Base(e.jails.limits.dirs[ctlCPU]) + "/jail-"; !strings.Contains(cg.Stdout.Text, want) {
			t.Errorf("the command's cpu cgroup: %q, want one in %s", cg.Stdout.Text, want)
		}
	}
	if other := run("bob", "echo fine", 10*time.Second); other.Stdout.Text != "fine\n" || other.Limit != "" {
		t.Errorf("the other session: %+v", other)
	}
}

// TestMemoryLimitBeforeStartAnswered: a shell that the memory limit
// ends before the host has taken up the answer to its start (a busy host)
// still gets the marker: the kill is counted against what the count was
// before the start was asked for. The host here waits, after the agent's
// answer, until the shell has exited.
func TestMemoryLimitBeforeStartAnswered(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	e, err := newSandbox(t, &Options{Limits: Limits{Memory: 64 << 20}, afterStart: awaitExit(t),
		Local: &local.Options{Cwd: ws, Grace: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	skipWithoutLimits(t, e)
	ctx := context.Background()
	spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "head -c 300000000 /dev/zero | tail > /dev/null",
		Workspace: ws, Workdir: ws, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, spec)
	if err != nil || res.Limit != "memory limit 64 MiB" || res.ExitCode != 137 {
		t.Errorf("limit %q, exit %d, err %v; want the memory limit's kill", res.Limit, res.ExitCode, err)
	}
}

// awaitExit is an afterStart that waits, within testwait.Limit, until the
// shell of pidfd has exited.
func awaitExit(t *testing.T) func(pidfd int) {
	return func(pidfd int) {
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		deadline := time.Now().Add(testwait.Limit)
		for {
			n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
			switch {
			case n > 0:
				return
			case err == unix.EINTR:
				continue
			}
			t.Errorf("the shell did not exit within %v: %v", testwait.Limit, err)
			return
		}
	}
}

// skipWithoutLimits skips a test where the host lets no limit apply,
// unless CI=true: CI runs on hosts where they do.
func skipWithoutLimits(t *testing.T, e *Executor) {
	t.Helper()
	if e.jails.limitsErr == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("limits unavailable under CI: %v", e.jails.limitsErr)
	}
	t.Skipf("limits unavailable here: %v", e.jails.limitsErr)
}

// TestV1Dir: where this process's cgroup lies in a v1 hierarchy, from the
// mount table and /proc/self/cgroup, including a mount of part of the
// hierarchy (a container's) and a controller mounted with others.
func TestV1Dir(t *testing.T) {
	const mounts = `30 25 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
32 25 0:28 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
33 25 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
`
	for _, tt := range []struct {
		cgroup, ctrl, want string
		fails              bool
	}{
		{"4:memory:/user/a\n8:pids:/\n0::/\n", "memory", "/sys/fs/cgroup/memory/user/a", false},
		{"4:memory:/user/a\n8:pids:/\n0::/\n", "pids", "/sys/fs/cgroup/pids", false},
		{"2:cpu,cpuacct:/docker/abc/x\n", "cpuacct", "/sys/fs/cgroup/cpu,cpuacct/x", false},
		{"2:cpu,cpuacct:/elsewhere\n", "cpu", "", true},
		{"2:cpu,cpuacct:/docker/abcdef\n", "cpu", "", true},
		{"0::/user.slice\n", "memory", "", true},
	} {
		got, err := v1Dir(mounts, tt.cgroup, tt.ctrl)
		if got != tt.want || (err != nil) != tt.fails {
			t.Errorf("v1Dir(%q, %s) = %q, %v; want %q (fails %v)", tt.cgroup, tt.ctrl, got, err, tt.want, tt.fails)
		}
	}
}

// v1Mounted reports whether the host mounts a cgroup v1 hierarchy with
// controller ctl.
func v1Mounted(t *testing.T, ctl string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		_, fs, ok := strings.Cut(line, " - ")
		f := strings.Fields(fs)
		if ok && len(f) == 3 && f[0] == "cgroup" && slices.Contains(strings.Split(f[2], ","), ctl) {
			return true
		}
	}
	return false
}
