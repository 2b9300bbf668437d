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
