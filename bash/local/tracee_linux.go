package local

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// reapTracees reaps the shell's threads that made themselves this
// process's tracees (PTRACE_TRACEME: the shell's parent becomes the tracer)
// and have died. Such a thread, when it is not the shell's main thread,
// stays a zombie until its tracer reaps it, and until then the shell itself
// cannot be reaped: its Wait, and with it the command's end and Close,
// would wait for ever. Threads that are not our tracees are left alone
// (their wait fails with ECHILD).
func (p execProcess) reapTracees() {
	pid := p.cmd.Process.Pid
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil || tid == pid {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil)
	}
}
