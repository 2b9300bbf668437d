//go:build !unix

package local

import (
	"errors"
	"os"
	"syscall"
)

func outputPipe() (r, w *os.File, err error) { return os.Pipe() }

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func signalName(*os.ProcessState) string { return "" }

func newContainment(Containment) (containment, error) {
	return nil, errors.New("the local executor needs a Unix system")
}

func commandFile(string, *spiller) (*os.File, error) {
	return nil, errors.New("commands too long for argv need a Unix system")
}
