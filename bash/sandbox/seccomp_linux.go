package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"

	"github.com/dshgo/dsh/bash/execguard"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter every process of a jail runs under. It refuses (EPERM)
// the system calls a shell command has no business making and that widen
// the kernel's attack surface or reach outside the jail: tracing and
// reading other processes' memory, io_uring (which bypasses seccomp for the
// operations it queues), BPF, perf events, userfaultfd, the kernel keyring,
// every way to mount or to make or enter a namespace, kernel modules,
// kexec, reboot, swap, and typing into a terminal (TIOCSTI, TIOCLINUX). A
// system call of any other architecture (or the x32 ABI) kills the process:
// the numbers below mean nothing there.
//
// clone3 stays allowed: its flags are behind a pointer no filter can read,
// and the agent needs it to start each shell in its command's cgroup. What
// it could do beyond clone is still refused: the jail holds no capability,
// and user namespaces are disabled inside it (bwrap --disable-userns; in
// the Landlock layer, the agent refuses its commands' clone3: see
// clone3Guard).

// deniedSyscalls are refused outright.
var deniedSyscalls = []uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT,
	unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT,
	unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR, unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_PIDFD_GETFD,
}

// namespaceFlags are the clone flags that make a namespace.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWTIME

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

// auditArch is this architecture's AUDIT_ARCH value.
func auditArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
}

// layerDenied are refused in the Landlock layer too, whose commands share
// the host's IPC namespace (a jail has its own): System V IPC, through
// which they could read and write other processes' shared memory.
var layerDenied = []uintptr{
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV,
	unix.SYS_MSGCTL, unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
}

// filterOpts choose the filter's variant.
type filterOpts struct {
	// landlock: the Landlock layer's, which refuses besides System V IPC
	// (layerDenied) and unix sockets (socket(AF_UNIX): Landlock does not
	// stop a connect to a socket by its path, in a hidden directory or
	// not: an ssh agent's, tmux's, docker's); socketpair stays.
	landlock bool
	// networkOff, with landlock: inet sockets too (Landlock refuses TCP
	// connect and bind only: not UDP, MPTCP or a listen without bind).
	networkOff bool
	// tracer: the agent traces its shells (deny rules enforced at exec):
	// ptrace is allowed with execguard.TracerRequests, which act on a
	// tracer's own tracees only (every process of such a jail is the
	// agent's already) and read or write no memory or register; without,
	// every ptrace is refused.
	tracer bool
}

// filterProgram assembles the filter.
func filterProgram(o filterOpts) ([]bpf.RawInstruction, error) {
	arch, err := auditArch()
	if err != nil {
		return nil, err
	}
	p := archCheck(arch, retKill)
	if runtime.GOARCH == "amd64" { // the x32 ABI: the same arch, nr | 1<<30
		p = append(p, bpf.JumpIf{Cond: bpf.JumpLessThan, Val: 0x40000000, SkipTrue: 1},
			bpf.RetConstant{Val: retKill})
	}
	denied := deniedSyscalls
	if o.landlock {
		denied = append(slices.Clone(denied), layerDenied...)
	}
	if o.tracer {
		denied = slices.DeleteFunc(slices.Clone(denied), func(nr uintptr) bool { return nr == unix.SYS_PTRACE })
		p = append(p, execguard.PtraceCheck()...)
	}
	for _, nr := range denied {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM})
	}
	if o.landlock {
		p = append(p, argCheck(unix.SYS_SOCKET, offArg0, bpf.JumpEqual, unix.AF_UNIX)...)
	}
	if o.landlock && o.networkOff {
		p = append(p, argCheck(unix.SYS_SOCKET, offArg0, bpf.JumpEqual, unix.AF_INET)...)
		p = append(p, argCheck(unix.SYS_SOCKET, offArg0, bpf.JumpEqual, unix.AF_INET6)...)
	}
	p = append(p, argCheck(unix.SYS_CLONE, offArg0, bpf.JumpBitsSet, namespaceFlags)...)
	p = append(p, argCheck(unix.SYS_IOCTL, offArg1, bpf.JumpEqual, unix.TIOCSTI)...)
	p = append(p, argCheck(unix.SYS_IOCTL, offArg1, bpf.JumpEqual, unix.TIOCLINUX)...)
	p = append(p, bpf.RetConstant{Val: retAllow})
	return bpf.Assemble(p)
}

// archCheck returns other for a system call of another architecture than
// arch, and leaves the syscall number loaded for the next check.
func archCheck(arch, other uint32) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: other},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
}

// argCheck refuses syscall nr when the low 32 bits of an argument match val
// under cond; it leaves the syscall number loaded for the next check.
func argCheck(nr uintptr, off uint32, cond bpf.JumpTest, val uint32) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 4},
		bpf.LoadAbsolute{Off: off, Size: 4}, // little endian: the low half
		bpf.JumpIf{Cond: cond, Val: val, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
}

// filterBytes is the filter as bwrap --seccomp reads it: struct
// sock_filter entries in native byte order.
func filterBytes(o filterOpts) ([]byte, error) {
	prog, err := filterProgram(o)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = binary.NativeEndian.AppendUint16(b, in.Op)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	return b, nil
}

// The fence's filter, which the agent's forker thread installs over the
// jail's (see forker) where the jail has a network namespace of its own,
// so that every command runs under both. It leaves to the host, as a
// seccomp user notification, each system call that can reach a unix
// socket by its path: connect, sendmsg and sendmmsg (their address is
// behind a pointer no filter can read), and sendto with an address. The
// host makes the call itself, for the command (see fence), and a host
// service's socket is never reached. The rest is left to the jail's
// filter.

// Offsets of sendto's address argument (the fifth), in two halves.
const (
	offArg4Lo = 16 + 4*8
	offArg4Hi = offArg4Lo + 4
)

// fenceProgram assembles the fence's filter.
func fenceProgram() ([]bpf.RawInstruction, error) {
	arch, err := auditArch()
	if err != nil {
		return nil, err
	}
	const allow, notify = 11, 12 // the indices of the two returns
	at := func(i, target int) uint8 { return uint8(target - i - 1) }
	return bpf.Assemble([]bpf.Instruction{
		/* 0 */ bpf.LoadAbsolute{Off: offArch, Size: 4},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipFalse: at(1, allow)}, // the jail's filter kills it
		/* 2 */ bpf.LoadAbsolute{Off: offNr, Size: 4},
		/* 3 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CONNECT, SkipTrue: at(3, notify)},
		/* 4 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDMSG, SkipTrue: at(4, notify)},
		/* 5 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDMMSG, SkipTrue: at(5, notify)},
		/* 6 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDTO, SkipFalse: at(6, allow)},
		/* 7 */ bpf.LoadAbsolute{Off: offArg4Lo, Size: 4},
		/* 8 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: at(8, notify)},
		/* 9 */ bpf.LoadAbsolute{Off: offArg4Hi, Size: 4},
		/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: at(10, allow), SkipFalse: at(10, notify)},
		/* 11 */ bpf.RetConstant{Val: retAllow},
		/* 12 */ bpf.RetConstant{Val: unix.SECCOMP_RET_USER_NOTIF},
	})
}

// noUnixProgram is the fence's stand-in where the kernel cannot supervise
// (before Linux 5.19, or under another supervisor): socket(AF_UNIX) is
// refused, as in the Landlock layer, which closes the route to the host's
// sockets and the session's own with it; socketpair stays.
func noUnixProgram() ([]bpf.RawInstruction, error) {
	arch, err := auditArch()
	if err != nil {
		return nil, err
	}
	p := archCheck(arch, retAllow) // the jail's filter kills it
	p = append(p, argCheck(unix.SYS_SOCKET, offArg0, bpf.JumpEqual, unix.AF_UNIX)...)
	return bpf.Assemble(append(p, bpf.RetConstant{Val: retAllow}))
}
