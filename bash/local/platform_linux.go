//go:build linux

package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe asks for a 1 MiB pipe buffer, so a fast writer blocks less often.
// Failure (an unprivileged user past its pipe budget) is harmless.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
	}
}
