package main

import (
	"github.com/dshgo/dsh/internal/fds"
	"golang.org/x/sys/unix"
)

// harden makes this process non-dumpable: its /proc files (environ, mem,
// fd, …) then belong to root, and no process of the same unprivileged
// user — a command it runs — can read its memory or environment, look at
// its file descriptors, or ptrace it. Commands it starts are not affected
// (exec makes a process dumpable again). A command running as root can
// still do all of this; only the sandbox stops that.
//
// It also keeps the descriptors dsh-bash inherited beyond stderr (its
// client's, an editor's, a terminal's) from reaching the commands.
func harden() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return err
	}
	return fds.CloseOnExecFrom(3)
}
