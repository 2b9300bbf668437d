package k8s

import (
	"os"
	"strconv"
	"strings"
)

// bootID identifies this boot of the host.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// processStart is the start time of process pid in clock ticks after boot,
// 0 when it does not run.
func processStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the name may hold spaces and parentheses
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64) // field 22: starttime
	return n
}

// pidNamespace identifies this process's pid namespace ("pid:[INODE]").
func pidNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}
