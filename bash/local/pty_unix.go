//go:build unix

package local

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// openTerminal opens a pseudo-terminal of size rows×cols: the controlling
// side (read for the output), a second descriptor of it (written for the
// input), and the command's side.
func openTerminal(rows, cols int) (master, input, tty *os.File, err error) {
	master, tty, err = pty.Open()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open a terminal: %w", err)
	}
	if err = pty.Setsize(master, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err == nil {
		var fd int
		// Close-on-exec from the start: a shell forked meanwhile by
		// another task must not inherit the controlling side.
		if fd, err = unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0); err == nil {
			return master, os.NewFile(uintptr(fd), "ptmx-input"), tty, nil
		}
	}
	master.Close()
	tty.Close()
	return nil, nil, nil, fmt.Errorf("set up the terminal: %w", err)
}

// echoing reports whether the terminal whose controlling side is f echoes
// what is typed (its ECHO flag).
func echoing(f *os.File) bool {
	t, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil && t.Lflag&unix.ECHO != 0
}
