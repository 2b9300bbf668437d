//go:build !unix

package local

import (
	"errors"
	"os"
	"syscall"
)

func outputPipe() (r, w *os.File, err error) { return os.Pipe() }

func spawnAttr(*SpawnRequest) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func signalName(syscall.Signal) string { return "" }

func exitStatusOf(st *os.ProcessState) ExitStatus { return ExitStatus{Code: st.ExitCode()} }

func newContainment(Containment) (containment, error) {
	return nil, errors.New("the local executor needs a Unix system")
}

func commandFile(string, *spiller) (*os.File, error) {
	return nil, errors.New("commands too long for argv need a Unix system")
}
