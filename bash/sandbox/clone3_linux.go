package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"syscall"
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
// So the forker's thread puts clone3 under supervision (clone3Guard), as
// does every process it starts, and theirs; the host supervises it (the
// agent hands it the filter's listener when it is ready): it lets the
// kernel go on with the forker's own (a notification's pid is the
// calling thread's) and answers every other ENOSYS, as if the kernel had
// no clone3, which the C library takes for a cue to use clone (under the
// filter). A thread's creation in a command costs a round trip to the
// host, a fork none (fork and posix_spawn use clone).
//
// Not the agent: the forker's clone3, which Go makes as a raw system
// call, keeps its goroutine's P (the runtime's right to run Go code)
// while the kernel waits for the answer; with GOMAXPROCS=1 (one CPU) no
// goroutine of the agent's could answer, and with more a stop of the
// world (a garbage collection) begun meanwhile would wait for that P
// forever.
//
// A jail needs none of this (bwrap's --disable-userns holds), nor a
// forker with a guard (its clone filter refuses clone3 outright, and it
// moves each shell into its cgroup at its first stop).

// guardClone3 puts clone3 on the calling thread, the forker's, under
// supervision, and returns the filter's listener, for the host; why says
// why it cannot be (the kernel has no user notification, or another
// supervisor has the thread's), and then commands can make user
// namespaces where the system lets them.
func guardClone3() (listener int, why error) {
	prog, err := notifyProgram(unix.SYS_CLONE3)
	if err != nil {
		return -1, err
	}
	listener, err = execguard.ThreadFilter(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if err != nil {
		return -1, fmt.Errorf("the kernel cannot supervise the commands' clone3 (%w): they can make user namespaces where the system lets them", err)
	}
	return listener, nil
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

// clone3Guard, on the host, answers the clone3 calls of a Landlock-layer
// agent's forker thread and of every process it started.
type clone3Guard struct {
	listener int
	stop     int         // an eventfd that ends the loop
	forker   int         // the forker's thread id
	agent    *os.Process // the agent, the host's child
	done     chan struct{}
}

// newClone3Guard takes the agent's clone3 listener, after checking that
// it is one, and starts answering: the calls of thread forker of process
// agent go on (agent nil: none does).
func newClone3Guard(listener, forker int, agent *os.Process) (*clone3Guard, error) {
	if !isNotifyListener(listener) {
		unix.Close(listener)
		return nil, fmt.Errorf("%w: its clone3 listener is not a seccomp listener", errProtocol)
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(listener)
		return nil, fmt.Errorf("the clone3 guard's eventfd: %w", err)
	}
	g := &clone3Guard{listener: listener, stop: stop, forker: forker, agent: agent, done: make(chan struct{})}
	go g.answer()
	return g, nil
}

// answer answers every clone3 until no process uses the filter, or close:
// the forker's goes on, any other fails with ENOSYS. Should the listener
// fail, it is closed: the kernel then answers every clone3 of the
// forker's tree with ENOSYS itself, and a shell's start fails, saying
// so, rather than wait for an answer that cannot come. It waits on a
// thread of its own, as the fence's loop does.
func (g *clone3Guard) answer() {
	defer close(g.done)
	defer unix.Close(g.listener)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		n, err := recvNotif(g.listener, g.stop)
		if err != nil {
			return
		}
		resp := seccompResp{ID: n.ID, Error: -int32(unix.ENOSYS)}
		if g.isForker(int(n.Pid)) {
			resp.Error, resp.Flags = 0, unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		}
		_ = notifIoctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)) // ENOENT: the caller is gone
	}
}

// isForker says whether thread tid, which waits for an answer, is the
// forker: it has the forker's id, the process of the agent's pid has a
// thread of that id, and that process is still the agent. The listener
// outlives the agent while a command lives, and ids are taken again: a
// thread's at once when it ends, the agent's pid once the host reaped
// it. Hence the order: a thread tid of the process with the agent's
// pid, then the agent not reaped (its pidfd), which makes that process
// the agent all along. (Not /proc: where it is mounted hidepid, a server
// not root cannot read the agent's, which is not dumpable.)
func (g *clone3Guard) isForker(tid int) bool {
	if tid != g.forker || g.agent == nil {
		return false
	}
	if unix.Tgkill(g.agent.Pid, tid, 0) != nil {
		return false
	}
	return g.agent.Signal(syscall.Signal(0)) == nil
}

// close ends the loop, which closes the listener: a clone3 of the jail's
// then fails ENOSYS.
func (g *clone3Guard) close() {
	_, _ = unix.Write(g.stop, binary.NativeEndian.AppendUint64(nil, 1))
	<-g.done
	unix.Close(g.stop)
}
