//go:build linux

package remote

import "syscall"

// dieWithParent makes the program get SIGKILL when this process dies (a
// SIGKILLed dsh-bash takes its ssh with it, which ends the far side).
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
