package local

import (
	"time"

	"golang.org/x/sys/unix"
)

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

// oldSleepLeft is sleepLeft of those calls: poll(fds, n, ms),
// epoll_wait(epfd, events, max, ms) and select(n, r, w, x, timeval).
func oldSleepLeft(pid int, nr int64, arg [6]uint64) (time.Duration, error) {
	switch nr {
	case unix.SYS_POLL:
		return msLeft(arg[2]), nil
	case unix.SYS_EPOLL_WAIT:
		return msLeft(arg[3]), nil
	case unix.SYS_SELECT:
		if arg[4] == 0 {
			return noEnd, nil
		}
		sec, usec, err := readPair(pid, arg[4])
		if err != nil {
			return 0, err
		}
		return pairDuration(sec, usec, time.Millisecond*1000*1000), nil
	}
	return noEnd, nil
}
