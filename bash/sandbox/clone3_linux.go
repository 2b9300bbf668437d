package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/dshgo/dsh/bash/execguard"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The Landlock layer's commands must not make user namespaces, as a
// jail's cannot (bwrap --disable-userns): in one of its own a process
// holds every capability again, over the namespaces it then makes (a
// network namespace's nftables, the kernel's most attacked code). The
// layer's filter refuses clone and unshare with a namespace's flag; but
// clone3's flags are behind a pointer no filter reads, and the agent
// needs clone3 itself, to start each shell in its command's cgroup
// (CLONE_INTO_CGROUP).
//
// So the forker's thread puts clone3 under the agent's supervision
// (clone3Guard), as does every process it starts, and theirs: the agent
// lets the kernel go on with the forker's own (a notification's pid is
// the calling thread's) and answers every other ENOSYS, as if the kernel
// had no clone3, which the C library takes for a cue to use clone (under
// the filter). A thread's creation in a command costs a round trip to the
// agent, a fork none (fork and posix_spawn use clone).
//
// A jail needs none of this (bwrap's --disable-userns holds), nor a
// forker with a guard (its clone filter refuses clone3 outright, and it
// moves each shell into its cgroup at its first stop).

// clone3Guard answers the clone3 calls of the forker's thread and of
// every process it started.
type clone3Guard struct {
	listener int
	forker   int // the forker's thread id
}

// guardClone3 puts clone3 on the calling thread, the forker's, under the
// agent's supervision and starts answering; why says why it cannot be
// (the kernel has no user notification, or another supervisor has the
// thread's), and then commands can make user namespaces where the
// system lets them.
func guardClone3() (why error) {
	prog, err := notifyProgram(unix.SYS_CLONE3)
	if err != nil {
		return err
	}
	listener, err := execguard.ThreadFilter(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if err != nil {
		return fmt.Errorf("the kernel cannot supervise the commands' clone3 (%w): they can make user namespaces where the system lets them", err)
	}
	g := &clone3Guard{listener: listener, forker: unix.Gettid()}
	go g.answer()
	return nil
}

// notifyProgram assembles a filter that makes system call nr its
// supervisor's; any other call, and a call of another architecture
// (which the layer's filter kills), is left to the other filters.
func notifyProgram(nr uint32) ([]bpf.RawInstruction, error) {
	arch, err := auditArch()
	if err != nil {
		return nil, err
	}
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipFalse: 3},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_USER_NOTIF},
		bpf.RetConstant{Val: retAllow},
	})
}

// answer answers every clone3 until the agent ends: the forker's goes
// on, any other fails with ENOSYS. Should the listener fail, it is
// closed: the kernel then answers every clone3 of the forker's tree
// with ENOSYS itself, and a shell's start fails, saying so, rather
// than wait for an answer that cannot come.
func (g *clone3Guard) answer() {
	defer unix.Close(g.listener)
	for {
		var n seccompNotif // the kernel wants it zeroed
		err := notifIoctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n))
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ENOENT):
			continue // ENOENT: the caller was gone before it was received
		case err != nil:
			return
		}
		resp := seccompResp{ID: n.ID, Error: -int32(unix.ENOSYS)}
		if int(n.Pid) == g.forker {
			resp.Error, resp.Flags = 0, unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		}
		_ = notifIoctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)) // ENOENT: the caller is gone
	}
}
