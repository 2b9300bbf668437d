//go:build linux

package local

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// commandFile puts a command in a sealed memfd for bash to read on fd 3: no
// file system is involved, and the seals keep anyone from changing it.
func commandFile(cmd string, _ *spiller) (*os.File, error) {
	fd, err := unix.MemfdCreate("dsh-command", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("make a memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "dsh-command")
	if _, err := f.WriteString(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the memfd: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal the memfd: %w", err)
	}
	return f, nil
}
