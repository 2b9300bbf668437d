//go:build linux

package sandbox

import (
	"cmp"
	"context"
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
// that is not root; where another supervisor has their system calls
// already, the layer cannot refuse clone3, and it says so, truly. The
// server is the test binary.
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
	command := probeIn(ws, "userns") + "; grep ^Cap /proc/self/status; id -u; " +
		`python3 -c 'import threading; t = threading.Thread(target=print, args=("a thread",)); t.start(); t.join()'`
	for _, c := range []struct {
		busy string
		want []string
	}{
		{"", []string{"userns: function not implemented\n", "CapInh:\t0000000000000000\n", "CapPrm:\t0000000000000000\n",
			"CapEff:\t0000000000000000\n", "CapAmb:\t0000000000000000\n", "\n65534\n", "\na thread\n", `usernsErr: ""`}},
		{"busy", []string{"userns: succeeded\n", `usernsErr: "the kernel cannot supervise the commands' clone3 (device or resource busy): they can make user namespaces where the system lets them"`}},
	} {
		t.Run("server="+cmp.Or(c.busy, "nobody"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testwait.Limit)
			defer cancel()
			cmd := exec.CommandContext(ctx, server, layerArg, c.busy, agent, ws, command)
			cmd.Env = []string{"TMPDIR=" + tmp, "HOME=" + home, "PATH=/usr/bin:/bin"}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
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
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
}
