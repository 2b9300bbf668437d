package main

import "golang.org/x/sys/unix"

// harden makes this process non-dumpable: its /proc files (environ, mem,
// fd, …) then belong to root, and no process of the same unprivileged
// user — a command it runs — can read its memory or environment, look at
// its file descriptors, or ptrace it. Commands it starts are not affected
// (exec makes a process dumpable again). A command running as root can
// still do all of this; only the sandbox stops that.
func harden() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
