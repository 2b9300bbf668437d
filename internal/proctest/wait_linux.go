package proctest

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExit waits until process pid has exited (a zombie counts as exited),
// without polling: it waits on a pidfd. It gives up after timeout, which
// only bounds a test that would otherwise hang.
func WaitExit(pid int, timeout time.Duration) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil // already gone and reaped
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(timeout)
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return fmt.Errorf("process %d still running after %v", pid, timeout)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll the pidfd of %d: %w", pid, err)
		}
		if n > 0 {
			return nil
		}
	}
}
