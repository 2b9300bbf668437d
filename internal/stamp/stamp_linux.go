//go:build linux

package stamp

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Self is this process's stamp, "PID-START", or "" when /proc cannot tell.
var Self = sync.OnceValue(func() string {
	start, err := StartTime(os.Getpid())
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d-%d", os.Getpid(), start)
})

// StartTime reads when process pid started from /proc/PID/stat.
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return ParseStartTime(b)
}

// ParseStartTime reads field 22 of a /proc/PID/stat text. The second field,
// the command name in parentheses, may hold spaces and parentheses itself.
func ParseStartTime(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(stat[i+1:])) // f[0] is field 3
	if len(f) < 20 {
		return 0, errors.New("short /proc stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Dead reports whether the process named by a stamp's pid and start is
// gone: no process has the pid, or the one that has it started at another
// time, or it is a zombie. A /proc it cannot read counts as alive.
func Dead(pid, start string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	st, err := ParseStartTime(b)
	if err != nil {
		return false
	}
	if strconv.FormatUint(st, 10) != start {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	state := strings.Fields(string(b[i+1:]))[0]
	return state == "Z" || state == "X"
}
