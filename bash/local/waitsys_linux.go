//go:build linux

package local

import (
	"math"
	"time"

	"golang.org/x/sys/unix"
)

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

// waitsQuietly reports whether system call nr only ever sleeps
// interruptibly, never on the disk: a wait for a futex, a time, a child,
// a signal, or readiness (poll, select, epoll).
func waitsQuietly(nr int64) bool {
	switch nr {
	case unix.SYS_FUTEX, unix.SYS_NANOSLEEP, unix.SYS_CLOCK_NANOSLEEP, unix.SYS_WAIT4, unix.SYS_WAITID,
		unix.SYS_RT_SIGSUSPEND, unix.SYS_RT_SIGTIMEDWAIT:
		return true
	}
	k := waitSyscall(nr)
	return k == sysPoll || k == sysSelect || k == sysEpoll
}

// noEnd is sleepLeft's answer for a sleep that does not end by itself.
const noEnd = time.Duration(math.MaxInt64)

// The futex operations that sleep with a timeout (linux/futex.h).
const (
	futexWait        = 0
	futexWaitBitset  = 9
	futexPrivateFlag = 128
	futexClockRT     = 256
)

// sleepLeft is the longest a thread sleeping in system call nr with arg
// sleeps before it wakes by itself (its timeout, as the call was made:
// some of it may have passed), or noEnd. Timeouts behind pointers are
// read from the memory of process pid.
func sleepLeft(pid int, nr int64, arg [6]uint64) (time.Duration, error) {
	switch nr {
	case unix.SYS_EPOLL_PWAIT:
		return msLeft(arg[3]), nil
	case unix.SYS_PPOLL:
		return relLeft(pid, arg[2])
	case unix.SYS_PSELECT6:
		return relLeft(pid, arg[4])
	case unix.SYS_EPOLL_PWAIT2:
		return relLeft(pid, arg[3])
	case unix.SYS_NANOSLEEP:
		return relLeft(pid, arg[0])
	case unix.SYS_CLOCK_NANOSLEEP:
		if arg[1]&unix.TIMER_ABSTIME != 0 {
			return absLeft(pid, int32(arg[0]), arg[2])
		}
		return relLeft(pid, arg[2])
	case unix.SYS_FUTEX:
		return futexLeft(pid, arg)
	}
	return oldSleepLeft(pid, nr, arg)
}

// futexLeft is sleepLeft of futex(uaddr, op, val, timeout, …).
func futexLeft(pid int, arg [6]uint64) (time.Duration, error) {
	op := arg[1]
	switch op &^ (futexPrivateFlag | futexClockRT) {
	case futexWait:
		return relLeft(pid, arg[3])
	case futexWaitBitset:
		clock := int32(unix.CLOCK_MONOTONIC)
		if op&futexClockRT != 0 {
			clock = unix.CLOCK_REALTIME
		}
		return absLeft(pid, clock, arg[3])
	}
	return noEnd, nil
}

// msLeft is a timeout in milliseconds, as an int argument: negative
// waits for ever.
func msLeft(v uint64) time.Duration {
	if ms := int32(v); ms >= 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return noEnd
}

// relLeft reads a struct timespec timeout at addr (none when 0).
func relLeft(pid int, addr uint64) (time.Duration, error) {
	if addr == 0 {
		return noEnd, nil
	}
	sec, nsec, err := readPair(pid, addr)
	if err != nil {
		return 0, err
	}
	return pairDuration(sec, nsec, time.Second), nil
}

// absLeft reads a struct timespec at addr, a time on clock, and returns
// how far it is from now.
func absLeft(pid int, clock int32, addr uint64) (time.Duration, error) {
	if addr == 0 {
		return noEnd, nil
	}
	sec, nsec, err := readPair(pid, addr)
	if err != nil {
		return 0, err
	}
	var now unix.Timespec
	if err := unix.ClockGettime(clock, &now); err != nil {
		return noEnd, nil // a clock of its own: it ends, but when is unknown
	}
	return max(pairDuration(sec-now.Sec, nsec-now.Nsec, time.Second), 0), nil
}

// pairDuration is sec seconds and sub units of unit/1e9 (a timespec's
// nanoseconds, or a timeval's microseconds with unit 1e12), saturating.
func pairDuration(sec, sub int64, unit time.Duration) time.Duration {
	if sec > int64(noEnd/time.Second)-1 {
		return noEnd
	}
	return time.Duration(sec)*time.Second + time.Duration(sub)*unit/time.Second
}
