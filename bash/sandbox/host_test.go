//go:build linux

package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"golang.org/x/sys/unix"
)

// TestAgentSocketUnreachable: a command cannot speak for its jail's agent.
// It tries to send the agent's messages on every descriptor it has (the
// socket was fd 3 of every shell, and one such message crashed the server),
// and nothing goes out; the server, the other session's task and the
// attacker's own session go on working.
func TestAgentSocketUnreachable(t *testing.T) {
	t.Parallel()
	e, err := newSandbox(t, &Options{Local: &local.Options{Cwd: t.TempDir(), SpillDir: t.TempDir()}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	victimWS, attackerWS := t.TempDir(), t.TempDir()
	spec, _ := e.Resolve(ctx, bash.ExecRequest{Command: "sleep 60", Owner: "victim", Workspace: victimWS, Workdir: victimWS})
	victim, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	run := func(cmd string) bash.RunResult {
		t.Helper()
		spec, _ := e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: "attacker", Workspace: attackerWS, Workdir: attackerWS, Timeout: 20 * time.Second})
		res, err := e.Run(ctx, spec)
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		return res
	}
	var attack strings.Builder
	attack.WriteString("for f in /proc/$$/fd/*; do n=${f##*/}; [ \"$n\" -gt 2 ] || continue; ")
	for _, m := range []string{`{"id":0,"started":true}`, `{"id":1,"started":true}`, `{"id":1,"exited":true,"code":0}`} {
		attack.WriteString("printf '" + m + "' 2>/dev/null >&$n && echo \"sent on $n\"; ")
	}
	attack.WriteString("done; echo done")
	if res := run(attack.String()); res.Stdout.Text != "done\n" {
		t.Errorf("the attack: %q; want nothing sent", res.Stdout.Text)
	}
	// Nor has a shell any descriptor beyond stdin, stdout and stderr: the
	// agent's socket and what the server inherited stay out.
	if res := run("ls /proc/$$/fd > fds; echo $(cat fds)"); res.Stdout.Text != "0 1 2\n" {
		t.Errorf("a shell's descriptors: %q; want 0 1 2", res.Stdout.Text)
	}
	if res := run("echo after"); res.Stdout.Text != "after\n" {
		t.Errorf("the attacker's session afterwards: %+v", res)
	}
	if task, err := e.Get(ctx, victim.ID); err != nil || task.Status != bash.StatusRunning {
		t.Errorf("the other session's task: %+v, %v; want it running", task, err)
	}
}

// TestDispatch: the host takes from the agent only what it asked for, in
// order; anything else is a protocol error, which ends that jail alone.
func TestDispatch(t *testing.T) {
	ready := agentMsg{Started: true}
	start := func(id uint64) agentMsg { return agentMsg{ID: id, Started: true} }
	exit := func(id uint64) agentMsg { return agentMsg{ID: id, Exited: true, Code: 3} }
	failed := agentMsg{ID: 1, Err: "no such file", Errno: 2}
	tests := []struct {
		name  string
		msgs  []agentMsg
		fds   []int // how many descriptors come with each message
		wrong int   // index of the first message that must be refused; -1: none
	}{
		{"a shell's life", []agentMsg{ready, start(1), exit(1)}, []int{0, 1, 0}, -1},
		{"a failed start", []agentMsg{ready, failed}, []int{0, 0}, -1},
		{"ready twice", []agentMsg{ready, ready}, []int{0, 0}, 1},
		{"first message not ready", []agentMsg{exit(0)}, []int{0}, 0},
		{"unknown shell", []agentMsg{ready, start(9)}, []int{0, 1}, 1},
		{"started twice", []agentMsg{ready, start(1), start(1)}, []int{0, 1, 1}, 2},
		{"ended before it started", []agentMsg{ready, exit(1)}, []int{0, 0}, 1},
		{"ended twice", []agentMsg{ready, start(1), exit(1), exit(1)}, []int{0, 1, 0, 0}, 3},
		{"a start without its pidfd", []agentMsg{ready, start(1)}, []int{0, 0}, 1},
		{"a start with two descriptors", []agentMsg{ready, start(1)}, []int{0, 2}, 1},
		{"an end after a failed start", []agentMsg{ready, failed, exit(1)}, []int{0, 0, 0}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJail("k", "o")
			for _, id := range []uint64{1, 2} {
				j.waiters[id] = &waiter{started: make(chan agentMsg, 1), exited: make(chan local.ExitStatus, 1)}
			}
			for i, m := range tt.msgs {
				err := j.dispatch(m, devNulls(t, tt.fds[i]))
				if got := errors.Is(err, errProtocol); got != (i == tt.wrong) {
					t.Fatalf("message %d (%+v): %v", i, m, err)
				}
				if err != nil {
					break
				}
			}
			for _, w := range j.waiters {
				if w.pidfd > 0 {
					unix.Close(w.pidfd)
				}
			}
		})
	}
}

// FuzzDispatch: whatever the agent sends, dispatch neither panics nor
// blocks, and never hands a shell two answers or two ends.
func FuzzDispatch(f *testing.F) {
	seed, _ := json.Marshal([]agentMsg{{Started: true}, {ID: 1, Started: true}, {ID: 1, Exited: true}})
	f.Add(seed, []byte{0, 1, 0})
	f.Fuzz(func(t *testing.T, msgs []byte, nfds []byte) {
		var ms []agentMsg
		if json.Unmarshal(msgs, &ms) != nil || len(ms) > 16 {
			return
		}
		j := newJail("k", "o")
		ws := map[uint64]*waiter{}
		for _, id := range []uint64{1, 2, 3} {
			ws[id] = &waiter{started: make(chan agentMsg, 1), exited: make(chan local.ExitStatus, 1)}
			j.waiters[id] = ws[id]
		}
		for i, m := range ms {
			n := 0
			if i < len(nfds) {
				n = int(nfds[i] % 3)
			}
			if err := j.dispatch(m, devNulls(t, n)); err != nil {
				break
			}
		}
		for _, w := range ws { // each channel holds at most its one message
			if w.pidfd > 0 {
				unix.Close(w.pidfd)
			}
		}
	})
}

// devNulls opens n descriptors, as if they came with a message.
func devNulls(t *testing.T, n int) []int {
	t.Helper()
	var fds []int
	for range n {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	return fds
}

// TestJailStartBounded: a jail whose bwrap fails at once (as inside a
// container or another jail, where it may not make namespaces) fails New
// at once with what bwrap said; one whose agent never says it is ready
// fails after StartTimeout. Neither waits for ever.
func TestJailStartBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, want string
		timeout            time.Duration // StartTimeout; default 300 ms
	}{
		{"bwrap fails", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1",
			"bwrap: No permissions to create new namespace", 0},
		{"agent never ready", "exec sleep 60", "did not start within 300ms", 0},
		// bwrap's end is noticed for itself, not only through the agent's
		// socket closing, which a process it left may hold open.
		{"bwrap fails, leaving a process", "sleep 60 & echo $! > $DIR/left; exit 3",
			"bwrap ended (exit status 3) before the sandbox started", 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bwrap := filepath.Join(dir, "bwrap")
			script := "#!/bin/sh\nDIR=" + dir + "\n" + tt.script + "\n"
			if err := proctest.WriteProgram(bwrap, []byte(script)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if b, err := os.ReadFile(filepath.Join(dir, "left")); err == nil {
					pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
					syscall.Kill(pid, syscall.SIGKILL)
					if err := proctest.WaitExit(pid, testwait.Limit); err != nil {
						t.Error(err)
					}
				}
			})
			made := make(chan error, 1)
			go func() {
				e, err := New(context.Background(), &Options{Layer: LayerJail, Bwrap: bwrap, StartTimeout: cmp.Or(tt.timeout, 300*time.Millisecond),
					Local: &local.Options{Cwd: t.TempDir(), SpillDir: t.TempDir()}, TempDir: t.TempDir()})
				if err == nil {
					e.Close()
				}
				made <- err
			}()
			err := testwait.Recv(t, made, "return from New with a broken bwrap")
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v; want ErrUnavailable saying %q", err, tt.want)
			}
		})
	}
}

// TestAutoFallsBackToLandlock: where bwrap cannot make a jail (here a
// stand-in that fails as Ubuntu's AppArmor makes it fail), the default
// layer is the Landlock layer, which says why, and holds: a write outside
// the workspace fails, one inside works.
func TestAutoFallsBackToLandlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bwrap := filepath.Join(dir, "bwrap")
	proctest.WriteProgram(bwrap, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"))
	ws, outside := t.TempDir(), t.TempDir()
	e, err := newSandbox(t, &Options{Bwrap: bwrap, Local: &local.Options{Cwd: ws, SpillDir: t.TempDir()}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	layer, why := e.Layer()
	if layer != LayerLandlock || why == nil || !strings.Contains(why.Error(), "setting up uid map") {
		t.Fatalf("layer %v, why %v; want the Landlock layer, saying why not the jail", layer, why)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Limit)
	defer cancel()
	spec, err := e.Resolve(ctx, bash.ExecRequest{Owner: "o", Workspace: ws, Workdir: ws,
		Command: "echo in > inside; echo out > " + filepath.Join(outside, "planted") + "; cat inside"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil || res.Stdout.Text != "in\n" {
		t.Errorf("write outside: %v; stdout %q, stderr %q", err, res.Stdout.Text, res.Stderr.Text)
	}
}

// TestJailStartCutShortLeavesNothing: a session's jail whose start is cut
// short (the call's context ends while bwrap sets it up) leaves no process:
// bwrap's child, which waits for bwrap to set it up and has no parent to
// die with once bwrap is killed, goes with it. The call is aborted.
func TestJailStartCutShortLeavesNothing(t *testing.T) {
	t.Parallel()
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "starting")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first jail (New's check) is real; the next one's bwrap leaves a
	// stand-in for its child, in its process group, and never gets ready.
	bwrap := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\nmkdir " + dir + "/first 2>/dev/null && exec " + real + " \"$@\"\n" +
		"sleep 300 &\necho $! > " + dir + "/left\necho > " + fifo + "\nwait\n"
	if err := proctest.WriteProgram(bwrap, []byte(script)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "left")); err == nil {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ws := t.TempDir()
	e, err := newSandbox(t, &Options{Layer: LayerJail, Bwrap: bwrap, Local: &local.Options{Cwd: ws, SpillDir: t.TempDir()}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "s", Workspace: ws, Workdir: ws})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { _, err := e.Run(ctx, spec); ran <- err }()
	testwait.ReadFIFO(t, fifo, "the session's bwrap under way")
	cancel()
	if err := testwait.Recv(t, ran, "the cut-short call's return"); !errors.Is(err, bash.ErrAborted) {
		t.Errorf("the call: %v; want it aborted", err)
	}
	pid := proctest.PidFromFile(t, filepath.Join(dir, "left"))
	if err := proctest.WaitExit(pid, testwait.Limit); err != nil {
		t.Errorf("bwrap's child outlived the jail cut short: %v", err)
	}
}
