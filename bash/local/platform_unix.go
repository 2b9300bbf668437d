//go:build unix

package local

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr starts the shell in a new session: a new process group, and no
// controlling terminal, so a program that opens /dev/tty fails at once
// instead of waiting for a person.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// signalName names the signal that ended the shell, or "" after a normal exit.
func signalName(st *os.ProcessState) string {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	if name := unix.SignalName(ws.Signal()); name != "" {
		return name
	}
	return "signal " + ws.Signal().String()
}

// openExclusive creates path for reading and writing; it fails if anything, a symlink
// included, is already there.
func openExclusive(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}
