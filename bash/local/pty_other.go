//go:build !unix

package local

import (
	"errors"
	"os"
)

func openTerminal(int, int) (master, input, tty *os.File, err error) {
	return nil, nil, nil, errors.New("terminals need a Unix system")
}

func termMode(*os.File) (echo, canon bool) { return false, false }
