//go:build unix

package local

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// spawnAttr is what SpawnExec asks of the kernel for req: a new session
// when req.Setsid (a new process group, and no controlling terminal, so a
// program that opens /dev/tty fails at once instead of waiting for a
// person), and the cgroup to be born in.
func spawnAttr(req *SpawnRequest) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: req.Setsid, Setctty: req.Setctty, Ctty: 0}
	setCgroupFD(attr, req.CgroupFD)
	return attr
}

// signalName names a signal the way the model reads it: "SIGTERM"; "" for 0.
func signalName(sig syscall.Signal) string {
	if sig == 0 {
		return ""
	}
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "signal " + sig.String()
}

// exitStatusOf reads a wait status.
func exitStatusOf(st *os.ProcessState) ExitStatus {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal()}
	}
	return ExitStatus{Code: st.ExitCode()}
}
