//go:build linux

package proctest

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Exited waits until pid has exited (a zombie counts as exited), for at
// most d, on a pidfd: no polling. It reports whether the process is gone.
func Exited(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		return !Alive(pid)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return !Alive(pid)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return !Alive(pid)
		}
	}
}
