//go:build !linux

package fds

import "syscall"

func closeOnExecFrom(first int) error {
	for fd := first; fd < 1024; fd++ {
		syscall.CloseOnExec(fd)
	}
	return nil
}
