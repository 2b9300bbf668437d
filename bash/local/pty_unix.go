//go:build unix

package local

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// openTerminal opens a pseudo-terminal of size rows×cols: the controlling
// side twice (read for the output, written for the input), both
// non-blocking so that their deadlines hold, and the command's side.
func openTerminal(rows, cols int) (master, input, tty *os.File, err error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open a terminal: %w", err)
	}
	defer ptmx.Close() // pty's *os.File is blocking (it called Fd): ours replace it
	var fds [2]int
	for i := range fds {
		// Close-on-exec as they are made: a shell another task forks
		// meanwhile must not inherit the controlling side.
		if fds[i], err = unix.FcntlInt(ptmx.Fd(), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			closeFDs(fds[:i])
			tty.Close()
			return nil, nil, nil, fmt.Errorf("set up the terminal: %w", err)
		}
	}
	// O_NONBLOCK is the open file's, shared by both: os.NewFile then makes
	// them pollable (deadlines; a read Close can interrupt).
	err = unix.SetNonblock(fds[0], true)
	if err == nil {
		err = unix.IoctlSetWinsize(fds[0], unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	}
	if err != nil {
		closeFDs(fds[:])
		tty.Close()
		return nil, nil, nil, fmt.Errorf("set up the terminal: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "ptmx"), os.NewFile(uintptr(fds[1]), "ptmx-input"), tty, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// termMode reads the mode of the terminal whose controlling side is f:
// whether it echoes what is typed (ECHO) and reads whole lines (ICANON: a
// read returns only once a line is ended). It reads f's descriptor
// without Fd, which would make it blocking.
func termMode(f *os.File) (echo, canon bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, false
	}
	_ = rc.Control(func(fd uintptr) {
		if t, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios); err == nil {
			echo, canon = t.Lflag&unix.ECHO != 0, t.Lflag&unix.ICANON != 0
		}
	})
	return echo, canon
}
