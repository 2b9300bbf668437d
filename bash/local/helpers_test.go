//go:build linux

package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/proctest"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The test binary doubles as helper programs for commands that need an odd
// child: DSH_TEST_HELPER names the helper and its arguments.
func TestMain(m *testing.M) {
	if h := os.Getenv("DSH_TEST_HELPER"); h != "" {
		os.Exit(runHelper(strings.Fields(h)))
	}
	proctest.QuickRaceExit()
	proctest.RaiseParallel(4)
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
		if pids := survivors(); len(pids) > 0 {
			fmt.Fprintln(os.Stderr, "processes of the tests' commands are still alive:", pids)
			code = 1
		}
	}
	os.Exit(code)
}

// marker is put in the environment of every test command, so the end of
// the run can tell whether any of them survived.
var marker = "DSH_TEST_RUN=" + strconv.Itoa(os.Getpid())

// testOptions adds the marker to o's environment.
func testOptions(o *Options) *Options {
	if o == nil {
		o = &Options{}
	}
	o.Env = append(o.Env, marker)
	return o
}

// survivors lists live processes that carry the marker.
func survivors() []int {
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || !bytes.Contains(b, []byte(marker+"\x00")) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(name, "/")[2])
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func runHelper(args []string) int {
	switch args[0] {
	case "executor": // executor MARKER SPILLDIR: see executorHelper
		return executorHelper(args[1], args[2])
	case "ctty": // ctty MARKER SPILLDIR: see cttyHelper
		return cttyHelper(args[1], args[2])
	case "traceme": // traceme: a thread other than the main one becomes the parent's tracee; then all wait
		return traceMe()
	case "waitin": // waitin MODE: see waitHelper
		return waitHelper(args[1])
	case "memwrite": // memwrite PROGRAM N: see memWrite
		n, _ := strconv.Atoi(args[2])
		return memWrite(args[1], n)
	case "gen": // gen N SEED: N pseudo-random bytes on stdout
		n, _ := strconv.ParseInt(args[1], 10, 64)
		seed, _ := strconv.ParseUint(args[2], 10, 64)
		w := bufio.NewWriterSize(os.Stdout, 1<<20)
		genStream(n, seed, func(p []byte) { w.Write(p) })
		w.Flush()
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper", args)
	return 2
}

func init() {
	if os.Getenv("DSH_TEST_HELPER") == "traceme" {
		runtime.LockOSThread() // main stays on the main thread
	}
}

// traceMe makes a thread that is not the main one a tracee of this
// process's parent (PTRACE_TRACEME), says so, and waits to be killed.
func traceMe() int {
	traced := make(chan error)
	go func() {
		runtime.LockOSThread() // not the main thread, which main holds
		_, _, errno := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		if errno != 0 {
			traced <- errno
			return
		}
		traced <- nil
		select {}
	}()
	if err := <-traced; err != nil {
		fmt.Fprintln(os.Stderr, "PTRACE_TRACEME:", err)
		return 1
	}
	fmt.Println("traced")
	select {}
}

// genStream produces n deterministic bytes in chunks.
func genStream(n int64, seed uint64, emit func([]byte)) {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	buf := make([]byte, 1<<20)
	for n > 0 {
		c := buf[:min(int64(len(buf)), n)]
		r.Read(c)
		emit(c)
		n -= int64(len(c))
	}
}

// helperCmd is a shell command that runs this test binary as a helper.
func helperCmd(t testing.TB, args string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("DSH_TEST_HELPER=%q %q", args, exe)
}

// modes are the containments tests run under; the cgroup one only where
// this process may make cgroups. In CI (CI=true) cgroups must work: the path
// production takes is never left untested there.
func modes(t testing.TB) map[string]Containment {
	m := map[string]Containment{"process group": ContainProcessGroup}
	if err := cgroupsUsable(); err == nil {
		m["cgroup"] = ContainCgroup
	} else {
		noCgroups(t, err)
	}
	return m
}

// cgroupsUsable reports why this process cannot contain commands in cgroups.
func cgroupsUsable() error {
	c, err := newCgroupContainment()
	if err == nil {
		c.close()
	}
	return err
}

// noCgroups says that a cgroup test cannot run here: a failure in CI, a log
// line elsewhere.
func noCgroups(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, but cgroup containment is unavailable: %v", err)
	}
	t.Logf("cgroup containment not tested here: %v", err)
}

// newExec makes an executor with short timers for tests and closes it at the
// end of the test, checking that Close succeeds.
func newExec(t testing.TB, o *Options) *Executor {
	t.Helper()
	o = testOptions(o)
	if o.Grace == 0 {
		o.Grace = 500 * time.Millisecond
	}
	if o.SpillDir == "" {
		o.SpillDir = t.TempDir()
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

func run(t testing.TB, e *Executor, req bash.ExecRequest) bash.RunResult {
	t.Helper()
	spec, err := e.Resolve(context.Background(), req)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	res, err := e.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", short(req.Command), err)
	}
	return res
}

// short cuts a long command for a message.
func short(cmd string) string {
	if len(cmd) > 200 {
		return fmt.Sprintf("%s… (%d bytes)", cmd[:200], len(cmd))
	}
	return cmd
}

func runCmd(t testing.TB, e *Executor, cmd string) bash.RunResult {
	t.Helper()
	return run(t, e, bash.ExecRequest{Command: cmd})
}

func start(t testing.TB, e *Executor, cmd, owner string) bash.Task {
	t.Helper()
	spec, err := e.Resolve(context.Background(), bash.ExecRequest{Command: cmd, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	task, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start(%q): %v", short(cmd), err)
	}
	return task
}

// startInput starts req with its input open: a pipe, or a terminal of
// size term where term is not nil.
func startInput(t testing.TB, e *Executor, req bash.ExecRequest, term *bash.TermSize) bash.Task {
	t.Helper()
	spec, err := e.Resolve(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	spec.Input, spec.Terminal = true, term
	task, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start(%q) with input: %v", short(req.Command), err)
	}
	return task
}

var alive = proctest.Alive

// readPids reads the pids a command wrote, one a line, into file.
func readPids(t testing.TB, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read pid file: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %v", file, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("pid file %s is empty", file)
	}
	return pids
}

func assertDead(t testing.TB, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still alive", pid)
		}
	}
}

// syncPoint lets a test know, without polling, that a command got somewhere.
type syncPoint struct{ fifo string }

// newSyncPoint makes a FIFO. A command that runs `echo > FIFO` blocks until
// the test calls reached, so the test knows the command got that far.
func newSyncPoint(t testing.TB) syncPoint {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sync")
	if err := mkfifo(p); err != nil {
		t.Fatal(err)
	}
	return syncPoint{p}
}

// reached waits until the command has written a line to the FIFO.
func (s syncPoint) reached(t testing.TB) {
	t.Helper()
	f, err := os.Open(s.fifo) // blocks until the command opens it to write
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := bufio.NewReader(f).ReadString('\n'); err != nil {
		t.Fatalf("sync point: %v", err)
	}
}

// readUntil reads a task's output until its stdout holds want, waking only
// when the task's stream changes.
func readUntil(t testing.TB, e *Executor, id bash.TaskID, want string) (stdout, stderr string) {
	t.Helper()
	tk, err := e.lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	<-tk.ready
	deadline := time.After(20 * time.Second)
	for {
		ch := tk.p.out.changed()
		r, err := e.ReadOutput(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		stdout += r.Stdout.Text
		stderr += r.Stderr.Text
		if strings.Contains(stdout, want) {
			return stdout, stderr
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("task %s never printed %q; got %q", id, want, stdout)
		}
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

// listTasks is e.List, which never fails for the local executor.
func listTasks(e *Executor) []bash.Task {
	l, _ := e.List(context.Background())
	return l
}
