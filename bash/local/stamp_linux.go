//go:build linux

package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// selfStamp names this process in the directories it makes, "PID-START",
// START being when it started (field 22 of /proc/PID/stat, in clock ticks
// since boot): a pid alone may be reused by another process once we are
// gone, the pair is not. It is "" when /proc cannot tell, and then no
// directory is stamped, so CleanStale never takes one of ours for stale.
var selfStamp = sync.OnceValue(func() string {
	start, err := procStartTime(os.Getpid())
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d-%d", os.Getpid(), start)
})

// procStartTime reads when process pid started from /proc/PID/stat.
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStartTime(b)
}

// parseStartTime reads field 22 of a /proc/PID/stat text. The second field,
// the command name in parentheses, may hold spaces and parentheses itself.
func parseStartTime(stat []byte) (uint64, error) {
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
