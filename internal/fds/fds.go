// Package fds keeps a process's inherited file descriptors out of the
// programs it starts.
package fds

// CloseOnExecFrom marks every descriptor from first on close-on-exec, so
// that none of them reaches a program this process executes unless it is
// passed on purpose (os/exec passes stdin, stdout, stderr and ExtraFiles
// either way). Descriptors a process inherits come without the flag: a
// client's, an editor's or a terminal's would otherwise reach every
// command. Go opens its own descriptors close-on-exec already.
func CloseOnExecFrom(first int) error { return closeOnExecFrom(first) }
