//go:build linux

package local

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"golang.org/x/sys/unix"
)

// executorHelper is a program with an executor: it spills, starts a
// background sleep, prints "cgroup DIR", "spill DIR", "sleep PID" and
// "ready", then waits for stdin to close, closes the executor and exits.
// Its commands carry marker, so the test run can tell if one survives.
func executorHelper(marker, spillDir string) int {
	fail := func(err error) int { fmt.Println("error", err); return 1 }
	e, err := New(&Options{Containment: ContainCgroup, MaxOutputBytes: 10, SpillDir: spillDir, Env: []string{marker}})
	if err != nil {
		return fail(err)
	}
	defer e.Close()
	spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "seq 100", Owner: "alice"})
	if res, err := e.Run(context.Background(), spec); err != nil || res.Stdout.SpillPath == "" {
		return fail(fmt.Errorf("no spill: %v", err))
	}
	fifo := filepath.Join(spillDir, "pid-"+strconv.Itoa(os.Getpid()))
	if err := mkfifo(fifo); err != nil {
		return fail(err)
	}
	defer os.Remove(fifo)
	spec, _ = e.Resolve(context.Background(), bash.ExecRequest{Command: "echo $$ > " + fifo + "; exec sleep 300", Owner: "alice"})
	if _, err := e.Start(context.Background(), spec); err != nil {
		return fail(err)
	}
	pid, err := os.ReadFile(fifo) // until the command has written and closed it
	if err != nil {
		return fail(err)
	}
	fmt.Printf("cgroup %s\nspill %s\nsleep %s\nready\n", e.cont.(*cgroupContainment).dir, e.spill.root.path, strings.TrimSpace(string(pid)))
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// helperProc is a running executorHelper.
type helperProc struct {
	cmd           *exec.Cmd
	stdin         io.WriteCloser
	cgroup, spill string
	sleep         int
}

// startExecutorHelper starts an executorHelper in the cgroup cgFD and
// reads its report.
func startExecutorHelper(t *testing.T, cgFD int, spillDir string) *helperProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "DSH_TEST_HELPER=executor "+marker+" "+spillDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cgFD}
	cmd.Stderr = os.Stderr
	h := &helperProc{cmd: cmd}
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "cgroup":
			h.cgroup = v
		case "spill":
			h.spill = v
		case "sleep":
			h.sleep, _ = strconv.Atoi(v)
		case "ready":
			return h
		default:
			t.Fatalf("helper: %s", sc.Text())
		}
	}
	t.Fatalf("helper ended before it was ready: %v", sc.Err())
	return nil
}

// testCgroup makes a cgroup of the test's own, under ours, for helpers to
// run in, and removes it (killing what is left) at the end of the test.
func testCgroup(t *testing.T) (dir string, fd int) {
	t.Helper()
	home, err := ownCgroupHome()
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(home.dir, "dsh-test-"+randomHex(4))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(fd)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
			t.Errorf("clean up: %v", err)
		}
		if err := waitUnpopulated(ctx, dir); err != nil {
			t.Errorf("clean up: %v", err)
		}
		if err := removeCgroupTree(dir); err != nil {
			t.Errorf("clean up: %v", err)
		}
	})
	return dir, fd
}

// TestCleanStale: an executor's process is SIGKILLed with a background
// command running; CleanStale removes exactly its cgroup and spill
// directories (and those named after a process whose pid was reused) and
// kills the command, and leaves a live executor's alone.
func TestCleanStale(t *testing.T) {
	t.Parallel()
	if err := cgroupsUsable(); err != nil {
		noCgroups(t, err)
		return
	}
	cgDir, cgFD := testCgroup(t)
	spills := t.TempDir()
	dead := startExecutorHelper(t, cgFD, spills)
	live := startExecutorHelper(t, cgFD, spills)
	if !alive(dead.sleep) || !alive(live.sleep) {
		t.Fatal("setup: a helper's sleep is not running")
	}
	dead.cmd.Process.Signal(syscall.SIGKILL)
	dead.cmd.Wait()
	if !alive(dead.sleep) {
		t.Fatal("setup: the killed helper's sleep died with it")
	}
	fakeCgroup, fakeSpill := plantReusedPidDirs(t, cgDir, spills)
	othersCgroup := plantOtherUsersCgroup(t, cgDir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	removed, err := cleanStaleCgroups(ctx, cgDir)
	if err != nil {
		t.Error(err)
	}
	spillsRemoved, err := cleanStaleSpills(spills)
	if err != nil {
		t.Error(err)
	}
	removed = append(removed, spillsRemoved...)
	slices.Sort(removed)
	want := []string{dead.cgroup, dead.spill, fakeCgroup, fakeSpill}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q; want %q", removed, want)
	}
	assertDead(t, dead.sleep)
	for _, dir := range want {
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", dir, err)
		}
	}
	if othersCgroup != "" {
		if _, err := os.Stat(othersCgroup); err != nil {
			t.Errorf("another user's stale cgroup was touched: %v", err)
		}
	}
	checkLive(t, live)
	live.stdin.Close()
	if err := live.cmd.Wait(); err != nil {
		t.Errorf("the live helper: %v", err)
	}
	assertDead(t, live.sleep)
}

// plantReusedPidDirs makes a cgroup and a spill directory named after a
// process that died and whose pid lives on in another process (ours): only
// the start time tells them apart.
func plantReusedPidDirs(t *testing.T, cgDir, spills string) (cgroup, spill string) {
	t.Helper()
	start, err := procStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	reused := fmt.Sprintf("%d-%d-0badf00d", os.Getpid(), start+1)
	cgroup, spill = filepath.Join(cgDir, "dsh-"+reused), filepath.Join(spills, "dsh-spill-"+reused)
	for _, dir := range []string{cgroup, spill, spill + "/no-owner"} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(spill+"/no-owner/stdout-1.log", []byte("x"), 0o600)
	return cgroup, spill
}

// plantOtherUsersCgroup makes, when this test runs as root, a stale
// executor cgroup that belongs to another user, which CleanStale must leave
// alone; it returns "" otherwise.
func plantOtherUsersCgroup(t *testing.T, cgDir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return ""
	}
	start, err := procStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cgDir, fmt.Sprintf("dsh-%d-%d-0ddba11d", os.Getpid(), start+2))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkLive checks that a live helper's directories and sleep are intact.
func checkLive(t *testing.T, h *helperProc) {
	t.Helper()
	for _, dir := range []string{h.cgroup, h.spill} {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			t.Errorf("the live executor's %s was touched: %v", dir, err)
		}
	}
	if !alive(h.sleep) {
		t.Error("the live executor's command was killed")
	}
}

// TestCleanStaleSparesLive: CleanStale, as exported, on this machine where
// other executors may be running, never removes a live executor's
// directories: this process's, or another process's.
func TestCleanStaleSparesLive(t *testing.T) {
	t.Parallel()
	if err := cgroupsUsable(); err != nil {
		noCgroups(t, err)
		return
	}
	_, cgFD := testCgroup(t)
	spills := t.TempDir()
	other := startExecutorHelper(t, cgFD, spills)
	e := newExec(t, &Options{MaxOutputBytes: 10, SpillDir: spills, Containment: ContainCgroup})
	pids := filepath.Join(t.TempDir(), "pid")
	sp := newSyncPoint(t)
	tk := start(t, e, "seq 100; echo $$ > "+pids+"; echo > "+sp.fifo+"; exec sleep 30", "bob")
	sp.reached(t)
	waitBytes(t, e, tk.ID, int64(len(seqText(100)))) // spilled
	ours := &helperProc{cgroup: e.cont.(*cgroupContainment).dir, spill: e.spill.root.path, sleep: readPids(t, pids)[0]}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	removed, err := CleanStale(ctx, spills)
	t.Logf("removed %q, %v", removed, err)
	for _, h := range []*helperProc{other, ours} {
		if slices.Contains(removed, h.cgroup) || slices.Contains(removed, h.spill) {
			t.Errorf("CleanStale removed a live executor's directory: %q", removed)
		}
		checkLive(t, h)
	}
}

// TestCleanStaleQuietWithoutCgroup: where this process's cgroup directory
// is not in view (inside another dsh-bash's jail, whose cgroup file system
// is hidden), there is nothing to clean and nothing to say.
func TestCleanStaleQuietWithoutCgroup(t *testing.T) {
	removed, err := cleanStaleCgroups(context.Background(), filepath.Join(t.TempDir(), "not-mounted"))
	if err != nil || len(removed) != 0 {
		t.Errorf("removed %q, %v; want nothing, quietly", removed, err)
	}
}
