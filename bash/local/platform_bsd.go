//go:build unix && !linux

package local

import (
	"golang.org/x/sys/unix"
	"os"
	"syscall"
)

func outputPipe() (r, w *os.File, err error) { return os.Pipe() }

// newContainment uses process groups: cgroups are Linux's. A zombie member
// keeps a group alive for kill(2), so emptiness is only as good as the
// system's reaping.
func newContainment(mode Containment) (containment, error) {
	if mode == ContainCgroup {
		return nil, errCgroupUnsupported
	}
	return newPgroupContainment(func(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }), nil
}

func setCgroupFD(*syscall.SysProcAttr, int) {} // cgroups are Linux's

// ioctlGetTermios reads a terminal's settings.
const ioctlGetTermios = unix.TIOCGETA
