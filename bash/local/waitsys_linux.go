//go:build linux

package local

import "golang.org/x/sys/unix"

// waitKind is how a system call a thread sleeps in can wait for input.
type waitKind int8

const (
	sysOther  waitKind = iota
	sysRead            // read(fd, …) and its kin: ARG0 is the descriptor
	sysPoll            // poll(fds, n, …), ppoll: ARG0 and ARG1 are the set
	sysSelect          // select(n, readfds, …), pselect6
	sysEpoll           // epoll_wait(epfd, …) and its kin: ARG0 is the instance
)

// waitSyscall classifies a system call number of this architecture.
func waitSyscall(nr int64) waitKind {
	switch nr {
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64, unix.SYS_PREADV, unix.SYS_PREADV2:
		return sysRead
	case unix.SYS_PPOLL:
		return sysPoll
	case unix.SYS_PSELECT6:
		return sysSelect
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2:
		return sysEpoll
	}
	return oldWaitSyscall(nr)
}
