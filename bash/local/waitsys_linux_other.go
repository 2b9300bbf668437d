//go:build linux && !amd64

package local

import "time"

// oldWaitSyscall: only the p-variants of poll, select and epoll_wait are
// known on this architecture (amd64's older calls are in
// waitsys_linux_amd64.go; an architecture that has them too reads as
// one whose programs never wait in them).
func oldWaitSyscall(int64) waitKind { return sysOther }

// oldSleepLeft: see oldWaitSyscall.
func oldSleepLeft(int, int64, [6]uint64) (time.Duration, error) { return noEnd, nil }
