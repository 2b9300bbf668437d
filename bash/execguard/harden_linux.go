package execguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TracerRequests are the ptrace requests a traced tree needs, and all it
// may make: PTRACE_TRACEME, with which each process of it is started, and
// those its tracer makes on its own tracees. A process of a traced tree
// can attach to none (it is traced already, and so are its children),
// read or write no other's memory or registers with them.
//
// PTRACE_SEIZE is among them: a tracer seizes each tree's first process
// (see Tracer.Adopt). A process of the tree cannot seize another, which
// has a tracer already; a tree of the local executor sits in a Landlock
// domain of its own (HardenThread), out of any other tree's reach. With
// CAP_SYS_PTRACE (root, unsandboxed) a process of the tree can seize its
// tracer's thread: with these requests it can then stop it, which stops
// the tree, and read or write nothing.
var TracerRequests = []uint32{
	unix.PTRACE_TRACEME, unix.PTRACE_CONT, unix.PTRACE_KILL, unix.PTRACE_DETACH,
	unix.PTRACE_SETOPTIONS, unix.PTRACE_GETEVENTMSG, unix.PTRACE_GETSIGINFO,
	unix.PTRACE_SEIZE, unix.PTRACE_LISTEN,
}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// PtraceCheck is a seccomp filter fragment for a filter that has the
// native system call number loaded: ptrace is allowed with the
// TracerRequests only (refused, EPERM, with any other), and any other
// system call falls through with its number still loaded.
func PtraceCheck() []bpf.Instruction {
	n := len(TracerRequests)
	p := []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_PTRACE), SkipFalse: uint8(n + 3)},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
	}
	for i, r := range TracerRequests {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: r, SkipTrue: uint8(n - i)})
	}
	return append(p, bpf.RetConstant{Val: retEPERM}, bpf.RetConstant{Val: retAllow})
}

// archCalls are an architecture's numbers of the calls the filters
// check. Those of the compatibility ABI (i386 on amd64, arm on arm64:
// any process can make them) are checked by number.
type archCalls struct {
	arch                       uint32
	ptrace, vmw, clone, clone3 uint32
}

func archTable() (native archCalls, compat []archCalls, err error) {
	switch runtime.GOARCH {
	case "amd64":
		return archCalls{arch: unix.AUDIT_ARCH_X86_64},
			[]archCalls{{arch: unix.AUDIT_ARCH_I386, ptrace: 26, vmw: 348, clone: 120, clone3: 435}}, nil
	case "arm64":
		return archCalls{arch: unix.AUDIT_ARCH_AARCH64},
			[]archCalls{{arch: unix.AUDIT_ARCH_ARM, ptrace: 26, vmw: 377, clone: 120, clone3: 435}}, nil
	}
	return archCalls{}, nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
}

// cloneCheck refuses, for a filter that has the system call number
// loaded, the two ways to start a process its tracer is not told of:
// clone with CLONE_UNTRACED (EPERM), and clone3, whose flags are behind a
// pointer no filter can read (ENOSYS: the C library falls back to
// clone). Any other call is allowed: it must come last.
func cloneCheck(clone, clone3 uint32) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: clone3, SkipFalse: 1},
		bpf.RetConstant{Val: retENOSYS},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: clone, SkipFalse: 3},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_UNTRACED, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	}
}

// compatBlock is the part of a filter for one compatibility ABI, which
// leaves the architecture loaded for the next check when it is another.
func compatBlock(c archCalls, memory bool) []bpf.Instruction {
	blk := []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}}
	if memory {
		blk = append(blk, bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.ptrace, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.vmw, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM})
	}
	blk = append(blk, cloneCheck(c.clone, c.clone3)...)
	return append([]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.arch, SkipFalse: uint8(len(blk))}}, blk...)
}

// filter assembles a tree's filter: with memory, the calls that write
// another process's memory too (HardenThread's); without, the clones a
// tracer is not told of alone (CloneFilter's).
func filter(memory bool) ([]bpf.RawInstruction, error) {
	native, compat, err := archTable()
	if err != nil {
		return nil, err
	}
	p := []bpf.Instruction{bpf.LoadAbsolute{Off: offArch, Size: 4}}
	for _, c := range compat {
		p = append(p, compatBlock(c, memory)...)
	}
	p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: native.arch, SkipTrue: 1},
		bpf.RetConstant{Val: retAllow},
		bpf.LoadAbsolute{Off: offNr, Size: 4})
	if runtime.GOARCH == "amd64" { // the x32 ABI: the same arch, nr | 1<<30
		p = append(p, bpf.JumpIf{Cond: bpf.JumpLessThan, Val: 0x40000000, SkipTrue: 1},
			bpf.RetConstant{Val: retEPERM})
	}
	if memory {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_PROCESS_VM_WRITEV), SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM})
		p = append(p, PtraceCheck()...)
	}
	p = append(p, cloneCheck(uint32(unix.SYS_CLONE), uint32(unix.SYS_CLONE3))...)
	return bpf.Assemble(p)
}

// CloneFilter installs, on the calling thread alone, a seccomp filter
// that refuses clone with CLONE_UNTRACED and clone3 (see cloneCheck):
// every process the thread starts then stays in its tracer's sight. A
// thread whose processes are traced must carry it (HardenThread does);
// it cannot itself start a process into a cgroup (CLONE_INTO_CGROUP
// needs clone3), so it moves it there at its first stop (Options.Stopped).
func CloneFilter() error {
	raw, err := filter(false)
	if err != nil {
		return err
	}
	return installThread(raw)
}

// ThreadFilter installs a seccomp filter on the calling thread alone (no
// TSYNC), with no_new_privs first, and returns what seccomp returned (a
// listener with SECCOMP_FILTER_FLAG_NEW_LISTENER in flags), or the
// kernel's error as it is (an Errno) when it refuses the filter. What the
// thread starts from then on inherits the filter; the thread must be
// locked to its goroutine for good.
func ThreadFilter(prog []bpf.RawInstruction, flags uintptr) (int, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("no new privileges: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// installThread installs a filter of this package on the calling thread.
func installThread(raw []bpf.RawInstruction) error {
	if _, err := ThreadFilter(raw, 0); err != nil {
		return fmt.Errorf("install the seccomp filter: %w", err)
	}
	return nil
}

// HardenThread makes the calling thread, and every process it starts
// from then on, unable to change another process's memory, so that no
// process of a traced tree can rewrite a stopped program between its
// check and its first instruction, nor start one its tracer is not told
// of: no new privileges; a seccomp filter that refuses process_vm_writev,
// every ptrace request but TracerRequests, and clone with CLONE_UNTRACED
// and clone3 (see CloneFilter); and a Landlock domain in which
// no file under /proc can be opened for writing (/proc/PID/mem): without
// Landlock it fails with ErrNoLandlock. The
// domain costs the tree writes to /proc (oom_score_adj, /proc/sys), and
// the files and directories made directly in / after this call.
//
// The thread must be locked to its goroutine for good: what is set on it
// cannot be taken back. It is an Options.Prepare.
func HardenThread() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no new privileges: %w", err)
	}
	if err := procReadOnly(); err != nil {
		return err
	}
	raw, err := treeProgram()
	if err != nil {
		return err
	}
	return installThread(raw)
}

// ErrNoLandlock: the kernel has no Landlock, without which a process of
// a traced tree could rewrite a checked program through /proc/PID/mem.
var ErrNoLandlock = errors.New("deny rules at exec need Landlock (Linux 5.13 or later, enabled in the kernel's LSM list): without it a command could rewrite a program between its check and its first instruction")

// procReadOnly restricts the thread to a Landlock domain that lets it
// write beneath every entry of / but /proc. Without Landlock it fails
// (ErrNoLandlock): the check would not hold.
func procReadOnly() error {
	fd, err := procRuleset()
	if err != nil {
		return err
	}
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("enter the Landlock domain: %w", err)
	}
	return nil
}

// procRuleset is the ruleset of procReadOnly, made once and kept open for
// every tree after (the entries of / are those of the first command's
// time): making it costs a tree's start some 0.4 ms on a small VM.
var procRuleset = sync.OnceValues(func() (int, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return -1, ErrNoLandlock
	}
	attr := llsys.RulesetAttr{HandledAccessFS: llsys.AccessFSWriteFile}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0) // close-on-exec always
	if err != nil {
		return -1, fmt.Errorf("make a Landlock ruleset: %w", err)
	}
	entries, err := os.ReadDir("/")
	if err == nil {
		for _, e := range entries {
			if e.Name() == "proc" {
				continue
			}
			if err = allowWrite(fd, filepath.Join("/", e.Name())); err != nil {
				break
			}
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
})

// treeProgram is HardenThread's seccomp filter, assembled once.
var treeProgram = sync.OnceValues(func() ([]bpf.RawInstruction, error) { return filter(true) })

func allowWrite(ruleset int, path string) error {
	f, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) {
			return nil // a dangling link, a directory we may not see
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(f)
	rule := llsys.PathBeneathAttr{AllowedAccess: llsys.AccessFSWriteFile, ParentFd: f}
	if err := llsys.LandlockAddPathBeneathRule(ruleset, &rule, 0); err != nil {
		return fmt.Errorf("let the tree write beneath %s: %w", path, err)
	}
	return nil
}
