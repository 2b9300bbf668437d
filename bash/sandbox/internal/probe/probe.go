//go:build linux

// Command probe is the system call probe that bash/sandbox's tests run
// inside jails: each of its commands makes a system call, or a race of
// them, that the jail must refuse, and prints what came of it. The tests
// build it without the race detector (a race-built test binary costs
// several times the CPU at each of its starts), and its attacks on the
// socket fence run at full speed.
//
// It lives under bash/sandbox/internal because it is the sandbox tests'
// own: nothing else builds or starts it.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	// PTRACE_TRACEME makes the calling thread a tracee of the probe's
	// parent, which without the sandbox is the test itself. Made from a
	// thread other than the main one, that thread's end is a zombie only
	// its tracer may reap, which the test never does, and the probe could
	// then never be reaped: the kill after the timeout hung. Locked in
	// init, main runs on the main thread.
	runtime.LockOSThread()
}

func main() {
	os.Exit(probe(os.Args[1:], os.Stdout))
}

// probe runs the command args: none, the system
// call probe; "x32", a system call of the x32 ABI (which the filter
// answers by killing the process: what it prints shows it lived); or
// "abstract NAME", a connection to the abstract unix socket @NAME.
func probe(args []string, w io.Writer) int {
	switch {
	case len(args) == 0:
		return probeSyscalls(w)
	case args[0] == "x32":
		// getpid with the x32 bit: ENOSYS where the kernel has no x32
		// ABI, a pid where it has one.
		r, _, errno := unix.RawSyscall(unix.SYS_GETPID|0x40000000, 0, 0, 0)
		fmt.Fprintf(w, "x32: %d %v\n", r, errorText(errno))
	case args[0] == "abstract" && len(args) == 2:
		c, err := net.Dial("unix", "@"+args[1])
		if err != nil {
			fmt.Fprintf(w, "abstract: %v\n", err)
			return 0
		}
		c.Close()
		fmt.Fprintln(w, "abstract: connected")
	case args[0] == "unix" && len(args) == 2:
		c, err := net.Dial("unix", args[1])
		if err != nil {
			fmt.Fprintf(w, "unix: %v\n", err)
			return 0
		}
		c.Close()
		fmt.Fprintln(w, "unix: connected")
	case args[0] == "fence":
		return probeFence(args[1:], w)
	case args[0] == "userns":
		probeUserns(w)
	case args[0] == "mptcp" && len(args) == 2:
		probeMPTCP(w, args[1])
	case args[0] == "shm" && len(args) == 2:
		probeShm(w, args[1])
	case args[0] == "tiocsti":
		// Type a character into the terminal on stdin, the command's own
		// controlling terminal where it runs in one.
		c := byte('#')
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		fmt.Fprintf(w, "tiocsti: %v\n", errorText(errno))
	case args[0] == "pty" && len(args) == 2:
		f, err := os.OpenFile(args[1], os.O_RDONLY|unix.O_NOCTTY, 0) // to read its keystrokes
		if err != nil {
			fmt.Fprintf(w, "pty: %v\n", err)
			return 0
		}
		f.Close()
		fmt.Fprintln(w, "pty: opened")
	default:
		fmt.Fprintf(w, "probe: unknown %q\n", args)
		return 2
	}
	return 0
}

// probeShm attaches the System V shared memory segment of key (decimal)
// and prints what it holds.
func probeShm(w io.Writer, key string) {
	var k int
	fmt.Sscan(key, &k)
	id, err := unix.SysvShmGet(k, 0, 0)
	if err != nil {
		fmt.Fprintf(w, "shm: %v\n", err)
		return
	}
	b, err := unix.SysvShmAttach(id, 0, unix.SHM_RDONLY)
	if err != nil {
		fmt.Fprintf(w, "shm: %v\n", err)
		return
	}
	defer unix.SysvShmDetach(b)
	fmt.Fprintf(w, "shm: %s\n", bytes.TrimRight(b, "\x00"))
}

// probeSyscalls makes each system call the jail's filter refuses, in a form
// that would otherwise succeed or fail differently, and prints one line per
// call with its error.
func probeSyscalls(w io.Writer) int {
	var params [120]byte // struct io_uring_params, zeroed
	var perfAttr [128]byte
	perfAttr[0] = 1 // PERF_TYPE_SOFTWARE, config 0: cpu clock
	calls := []struct {
		name string
		nr   uintptr
		args [3]uintptr
	}{
		// Peeking at a process we do not trace fails with ESRCH; the
		// filter's EPERM comes first. (PTRACE_TRACEME would succeed, but
		// it makes the probe's thread a tracee of its parent: the test
		// itself, without the sandbox.)
		{"ptrace", unix.SYS_PTRACE, [3]uintptr{unix.PTRACE_PEEKDATA, uintptr(unix.Getpid())}},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [3]uintptr{uintptr(unix.Getpid())}},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, [3]uintptr{4, uintptr(unsafe.Pointer(&params))}},
		{"bpf", unix.SYS_BPF, [3]uintptr{0xffff}},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [3]uintptr{uintptr(unsafe.Pointer(&perfAttr)), 0, ^uintptr(0)}},
		{"userfaultfd", unix.SYS_USERFAULTFD, [3]uintptr{0}},
		{"keyctl", unix.SYS_KEYCTL, [3]uintptr{0, 0}},
		{"add_key", unix.SYS_ADD_KEY, [3]uintptr{}},
		{"request_key", unix.SYS_REQUEST_KEY, [3]uintptr{}},
		{"mount", unix.SYS_MOUNT, [3]uintptr{}},
		{"unshare", unix.SYS_UNSHARE, [3]uintptr{unix.CLONE_NEWNS}},
		{"setns", unix.SYS_SETNS, [3]uintptr{0, 0}},
		// On a descriptor that is no terminal these fail with ENOTTY.
		{"ioctl(TIOCSTI)", unix.SYS_IOCTL, [3]uintptr{0, unix.TIOCSTI}},
		{"ioctl(TIOCLINUX)", unix.SYS_IOCTL, [3]uintptr{0, unix.TIOCLINUX}},
		// Bad descriptors and addresses: EBADF or EFAULT, past the filter.
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [3]uintptr{^uintptr(0)}},
		{"pidfd_getfd", unix.SYS_PIDFD_GETFD, [3]uintptr{^uintptr(0), 0}},
		{"finit_module", unix.SYS_FINIT_MODULE, [3]uintptr{^uintptr(0)}},
		{"init_module", unix.SYS_INIT_MODULE, [3]uintptr{0, 0, 0}},
		{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, [3]uintptr{^uintptr(0), ^uintptr(0), 0}},
		{"clone(CLONE_NEWUSER)", unix.SYS_CLONE, [3]uintptr{unix.CLONE_NEWUSER | uintptr(syscall.SIGCHLD)}},
	}
	for _, c := range calls {
		_, _, errno := unix.RawSyscall(c.nr, c.args[0], c.args[1], c.args[2])
		if c.nr == unix.SYS_CLONE && errno == 0 {
			// In the child (or the parent) of a clone that worked.
			fmt.Fprintf(w, "%s: succeeded\n", c.name)
			continue
		}
		fmt.Fprintf(w, "%s: %v\n", c.name, errorText(errno))
	}
	return 0
}

func errorText(errno syscall.Errno) string {
	if errno == 0 {
		return "succeeded"
	}
	return errno.Error()
}

// probeUserns makes a user namespace with clone3, whose flags no seccomp
// filter can read: what stops it is that user namespaces are disabled in
// a jail, and that the Landlock layer's agent answers its commands'
// clone3 with ENOSYS.
func probeUserns(w io.Writer) {
	args := struct{ flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls uint64 }{
		flags: unix.CLONE_NEWUSER, exitSignal: uint64(syscall.SIGCHLD)}
	pid, _, errno := unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args), 0)
	if errno == 0 && pid == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0) // the child: a copy of one thread of the probe's
	}
	if errno == 0 {
		var ws unix.WaitStatus
		unix.Wait4(int(pid), &ws, 0, nil)
	}
	fmt.Fprintf(w, "userns: %v\n", errorText(errno))
}

// probeMPTCP connects to addr (127.0.0.1:PORT) over MPTCP, which
// Landlock's TCP rules do not cover; "unsupported" where the kernel has
// no MPTCP.
func probeMPTCP(w io.Writer, addr string) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		fmt.Fprintf(w, "mptcp: %v\n", err)
		return
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 262) // IPPROTO_MPTCP
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ENOPROTOOPT) {
		fmt.Fprintln(w, "mptcp: unsupported")
		return
	}
	if err != nil {
		fmt.Fprintln(w, "mptcp: refused")
		return
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		fmt.Fprintln(w, "mptcp: refused")
		return
	}
	fmt.Fprintln(w, "mptcp: connected")
}
