//go:build !linux

package remote

import "syscall"

func dieWithParent() *syscall.SysProcAttr { return nil }
