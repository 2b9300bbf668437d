//go:build linux

package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

// The commands below signal the test from a subshell, so that the shell's
// own fd 1 is never redirected to the FIFO when the test reopens it.

// holdPipe starts a process outside the command's cgroup and process group
// (a child of the test, not of the shell) with the shell's stdout as its
// own: it reopens the pipe through /proc/PID/fd/1, as a daemon the command
// handed its stdout to would hold it. It lives until the test ends.
func holdPipe(t *testing.T, pid int) *exec.Cmd {
	t.Helper()
	// Non-blocking: should fd 1 be a FIFO by mistake, fail, not hang.
	w, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/fd/1", os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("reopen the command's stdout: %v", err)
	}
	defer w.Close()
	holder := exec.Command("sleep", "60")
	holder.Stdout = w
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	return holder
}

// TestReapBound: once a killed command is gone but a process beyond its
// reach still holds its output pipe, Kill (and an abort, which stops a run
// as a timeout does) still ends: after ReapBound the pipes are closed and
// the command counted as ended. Without the bound they would wait for the
// holder forever.
func TestReapBound(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		o := &Options{Containment: mode, Grace: 100 * time.Millisecond, ReapBound: 100 * time.Millisecond}
		t.Run(name+"/kill", func(t *testing.T) {
			e := newExec(t, o)
			pids, sp := filepath.Join(t.TempDir(), "pid"), newSyncPoint(t)
			tk := start(t, e, "echo $$ > "+pids+"; (echo > "+sp.fifo+"); exec sleep 30", "")
			sp.reached(t)
			holder := holdPipe(t, readPids(t, pids)[0])
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if killed, err := e.Kill(ctx, tk.ID); !killed || err != nil {
				t.Fatalf("Kill = %v, %v; want it to end", killed, err)
			}
			if got, _ := e.Get(context.Background(), tk.ID); got.Status != bash.StatusKilled {
				t.Errorf("task %+v", got)
			}
			if !alive(holder.Process.Pid) {
				t.Error("setup: the pipe's holder died: nothing was tested")
			}
		})
		t.Run(name+"/abort", func(t *testing.T) {
			e := newExec(t, o)
			pids, sp := filepath.Join(t.TempDir(), "pid"), newSyncPoint(t)
			spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "echo $$ > " + pids + "; (echo > " + sp.fifo + "); exec sleep 30"})
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan error, 1)
			go func() { _, err := e.Run(ctx, spec); got <- err }()
			sp.reached(t)
			holder := holdPipe(t, readPids(t, pids)[0])
			cancel()
			select {
			case err := <-got:
				if !errors.Is(err, bash.ErrAborted) {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				holder.Process.Kill() // lets Run return before the executor closes
				t.Fatal("an aborted run whose pipe is held outside never returned")
			}
			if !alive(holder.Process.Pid) {
				t.Error("setup: the pipe's holder died: nothing was tested")
			}
		})
	}
}
