//go:build !linux

package remote

import (
	"os"
	"syscall"
)

func dieWithParent() *syscall.SysProcAttr { return nil }

func killGroup(p *os.Process) { _ = p.Kill() }
