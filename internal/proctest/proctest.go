// Package proctest helps tests check on processes by pid.
package proctest

import (
	"bytes"
	"os"
	"strconv"
)

// Alive reports whether pid is a live process. A zombie counts as dead: an
// init that does not reap leaves them behind.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
