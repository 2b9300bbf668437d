//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// pollable returns w as a file in non-blocking mode, whose writes can then
// be given a deadline (so that shutting down never waits on a client that
// stopped reading), when w is a pipe or a socket; else w as it is.
func pollable(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return w
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return w
	}
	fd := f.Fd()
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		return w
	}
	return os.NewFile(fd, f.Name())
}
