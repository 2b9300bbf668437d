//go:build linux

package local

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// outputPipe makes a pipe for one output stream: the read end non-blocking
// and on the runtime's poller, the write end blocking and off it (it goes to
// the child as is), with a 1 MiB buffer so a fast writer blocks less often.
// A refused buffer size (an unprivileged user past its pipe budget) is
// harmless.
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, err
	}
	_, _ = unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, 1<<20)
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// setCgroupFD has the shell born in the cgroup dir fd, unless fd is -1.
func setCgroupFD(attr *syscall.SysProcAttr, fd int) {
	if fd >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	}
}

// ioctlGetTermios reads a terminal's settings.
const ioctlGetTermios = unix.TCGETS
