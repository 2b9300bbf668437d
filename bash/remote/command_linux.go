//go:build linux

package remote

import (
	"os"
	"syscall"
)

// dieWithParent makes the program get SIGKILL when this process dies (a
// SIGKILLed dsh-bash takes its ssh with it, which ends the far side), in a
// process group of its own (which the terminal's ^C does not reach, and
// which killGroup kills whole).
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills the program and whatever it started in its group.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
