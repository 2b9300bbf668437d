package fds

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func closeOnExecFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11: one at a time, as /proc lists them.
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		if fd, aerr := strconv.Atoi(name); aerr == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return err
}
