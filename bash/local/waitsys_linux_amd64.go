package local

import "golang.org/x/sys/unix"

// oldWaitSyscall classifies the system calls amd64 keeps from before
// their p-variants, which newer architectures (arm64) never had.
func oldWaitSyscall(nr int64) waitKind {
	switch nr {
	case unix.SYS_POLL:
		return sysPoll
	case unix.SYS_SELECT:
		return sysSelect
	case unix.SYS_EPOLL_WAIT:
		return sysEpoll
	}
	return sysOther
}
