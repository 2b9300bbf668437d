//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"golang.org/x/sys/unix"
)

// layerArg makes the test binary a server of the Landlock layer that
// runs one command (os.Args[5]) in workspace os.Args[4], its agent
// os.Args[3], and prints its output and the layer's View.UsernsErr; with
// os.Args[2] "busy", under a seccomp filter of its own with a listener
// (as under another supervisor), which its agents inherit.
const layerArg = "__dsh_test_layer_userns"

// layerServer is the test binary's part in TestLayerUserns.
func layerServer(busy, agent, ws, cmd string, w io.Writer) int {
	if busy == "busy" {
		if err := superviseSelf(); err != nil {
			fmt.Fprintln(w, err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	e, err := New(ctx, &Options{Layer: LayerLandlock, Agent: agent, TempDir: os.Getenv("TMPDIR"),
		Local: &local.Options{Cwd: ws}})
	if err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	defer e.Close()
	spec, err := e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: "layer", Workspace: ws, Workdir: ws})
	if err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	fmt.Fprintf(w, "%s%susernsErr: %q\n", res.Stdout.Text, res.Stderr.Text, e.View(ws, nil).UsernsErr)
	return 0
}

// superviseSelf puts every thread of the process under a seccomp filter
// with a listener, whose supervisor nothing asks (it supervises only
// vhangup, which nothing here calls).
func superviseSelf() error {
	prog, err := notifyProgram(unix.SYS_VHANGUP)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	const tsyncESRCH = 1 << 4 // SECCOMP_FILTER_FLAG_TSYNC_ESRCH
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_TSYNC|tsyncESRCH, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("supervise the process: %w", e)
	}
	return nil
}

// TestLayerUserns: the Landlock layer's commands cannot make a user
// namespace with clone3 (whose flags no seccomp filter reads; the
// isolation attacks try as root), and hold no capability, under a server
// that is not root; nor under one that is, whose shells start in their
// cgroups, with one P (GOMAXPROCS=1). Where another supervisor has their
// system calls already, the layer cannot refuse clone3, and it says so,
// truly. The server is the test binary.
func TestLayerUserns(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the test makes a server of another user: it needs root")
	}
	if landlockABI() < 1 {
		t.Skip("no Landlock")
	}
	dir, err := os.MkdirTemp("", "dsh-layer-userns-") // t.TempDir's parent is the tester's alone
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	server, agent := filepath.Join(bin, "server"), filepath.Join(bin, "agent")
	copyExec(t, selfAgent(t), server)
	copyExec(t, plainAgent(t), agent)
	ws, tmp, home := filepath.Join(dir, "ws"), filepath.Join(dir, "tmp"), filepath.Join(dir, "home")
	for _, d := range []string{ws, tmp, home} {
		os.Mkdir(d, 0o700)
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	// A thread's creation: glibc tries clone3, then clone.
	command := func(ws string) string {
		return probeIn(ws, "userns") + "; grep ^Cap /proc/self/status; id -u; " +
			`python3 -c 'import threading; t = threading.Thread(target=print, args=("a thread",)); t.start(); t.join()'`
	}
	guarded := []string{"userns: function not implemented\n", "CapInh:\t0000000000000000\n", "CapPrm:\t0000000000000000\n",
		"CapEff:\t0000000000000000\n", "CapAmb:\t0000000000000000\n", "\n65534\n", "\na thread\n", `usernsErr: ""`}
	for _, c := range []struct {
		name, busy, env string
		want            []string
	}{
		{"nobody", "", "", guarded},
		{"busy", "busy", "", []string{"userns: succeeded\n", `usernsErr: "the kernel cannot supervise the commands' clone3 (device or resource busy): they can make user namespaces where the system lets them"`}},
		// Root, whose shells start in their cgroups (the forker's own
		// clone3), with one P for the server and its agent, as on a
		// machine of one CPU: an agent that answered its forker's clone3
		// itself never started a shell (the call holds the P the answer
		// needs).
		{"root", "", "GOMAXPROCS=1", []string{"userns: function not implemented\n", "\n0\n", "\na thread\n", `usernsErr: ""`}},
	} {
		t.Run("server="+c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testwait.Limit)
			defer cancel()
			ws, tmp, home := ws, tmp, home
			if c.name == "root" { // directories of root's, who holds no capability there
				ws, tmp, home = t.TempDir(), t.TempDir(), t.TempDir()
			}
			cmd := exec.CommandContext(ctx, server, layerArg, c.busy, agent, ws, command(ws))
			cmd.Env = []string{"TMPDIR=" + tmp, "HOME=" + home, "PATH=/usr/bin:/bin", c.env}
			if c.name != "root" {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for _, want := range c.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
		})
	}
}

// copyExec links (else copies) the executable at from to to, which
// others may run: its directory may be the tester's alone.
func copyExec(t *testing.T, from, to string) {
	t.Helper()
	if fi, err := os.Stat(from); err == nil && fi.Mode().Perm()&0o005 == 0o005 && os.Link(from, to) == nil {
		return
	}
	if err := proctest.CopyProgram(from, to); err != nil {
		t.Fatal(err)
	}
}

// TestClone3DescriptorsChecked: the host takes the clone3 guard's
// listener from a Landlock-layer agent only where it asked for one, and
// only a seccomp listener; an agent asked for one must come with it, or
// say why the kernel cannot.
func TestClone3DescriptorsChecked(t *testing.T) {
	listener := func(t *testing.T) []int {
		// A real one: the filter is installed on a thread that ends with
		// the goroutine, its only user.
		got := make(chan int, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits
			fd, _ := guardClone3()
			got <- fd
		}()
		fd := <-got
		if fd < 0 {
			t.Skip("no seccomp user notification here")
		}
		return []int{fd}
	}
	none := func(t *testing.T) []int { return nil }
	guard := agentMsg{Started: true, Clone3: true, Forker: 1}
	for _, tc := range []struct {
		name   string
		wanted bool
		msg    agentMsg
		fds    func(t *testing.T) []int
		ok     bool
	}{
		{"a listener", true, guard, listener, true},
		{"none, and why", true, agentMsg{Started: true, UsernsErr: "the kernel cannot supervise the commands' clone3"}, none, true},
		{"none, and no word why", true, agentMsg{Started: true}, none, false},
		{"a file", true, guard, func(t *testing.T) []int { return devNulls(t, 1) }, false},
		{"said, not sent", true, guard, none, false},
		{"a listener and a file", true, guard, func(t *testing.T) []int { return append(listener(t), devNulls(t, 1)...) }, false},
		{"a listener not asked for", false, guard, listener, false},
		{"a listener, and why there is none", true, agentMsg{Started: true, Clone3: true, Forker: 1, UsernsErr: "x"}, listener, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJail("k", "o")
			j.clone3Wanted = tc.wanted
			err := j.dispatch(tc.msg, tc.fds(t))
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, errProtocol) {
				t.Fatalf("dispatch: %v, want ok %v or a protocol error", err, tc.ok)
			}
			if got := j.clone3 != nil; got != (tc.ok && tc.msg.Clone3) {
				t.Errorf("a clone3 guard: %v, want %v", got, tc.ok && tc.msg.Clone3)
			}
			if j.clone3 != nil {
				j.clone3.close()
			}
		})
	}
}

// TestClone3GuardAnswers: the host's clone3 guard lets the forker's own
// clone3 go on (here it fails EINVAL, in the kernel: no arguments), and
// answers ENOSYS to a thread of another id, to a thread of the forker's
// id in another process, and to one in the process that took the
// agent's pid once the agent was reaped (a command of the jail's can
// take both ids; here the test's own process stands for it).
func TestClone3GuardAnswers(t *testing.T) {
	other := exec.Command("sleep", "60") // a process that is not this one
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Wait()
	defer other.Process.Kill()
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	reaped.Process.Pid = os.Getpid() // its pid, taken again by this process
	for _, tc := range []struct {
		name   string
		forker func(tid int) int
		agent  *os.Process
		want   syscall.Errno
	}{
		{"the forker", func(tid int) int { return tid }, self, unix.EINVAL},
		{"another thread", func(tid int) int { return tid + 1 }, self, unix.ENOSYS},
		{"the forker's id in another process", func(tid int) int { return tid }, other.Process, unix.ENOSYS},
		{"the forker's id in the agent's pid, the agent reaped", func(tid int) int { return tid }, reaped.Process, unix.ENOSYS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clone3Answer(t, tc.forker, tc.agent); got != tc.want {
				t.Errorf("clone3: %v, want %v", got, tc.want)
			}
		})
	}
}

// clone3Answer installs the clone3 guard's filter on a thread of this
// process, has a guard with forker(the thread's id) and agent answer it,
// and returns what the thread's clone3 (without arguments) fails with.
func clone3Answer(t *testing.T, forker func(tid int) int, agent *os.Process) syscall.Errno {
	t.Helper()
	type result struct {
		errno     syscall.Errno
		why, fail error
	}
	got := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, filtered, exits
		fd, why := guardClone3()
		if why != nil {
			got <- result{why: why}
			return
		}
		g, err := newClone3Guard(fd, forker(unix.Gettid()), agent)
		if err != nil {
			got <- result{fail: err}
			return
		}
		defer g.close()
		// Not a raw call: the goroutine gives up its P while it waits
		// for the answer, which another goroutine makes.
		_, _, e := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
		got <- result{errno: e}
	}()
	r := testwait.Recv(t, got, "the clone3's answer")
	switch {
	case r.why != nil:
		t.Skip(r.why) // the kernel cannot supervise
	case r.fail != nil:
		t.Fatal(r.fail)
	}
	return r.errno
}
