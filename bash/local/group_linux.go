//go:build linux

package local

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// newContainment picks the containment: a cgroup v2 directory of our own
// when the host lets us make one under our cgroup, else process groups.
func newContainment(mode Containment) (containment, error) {
	if mode == ContainProcessGroup {
		return newPgroupContainment(pgroupAliveProc), nil
	}
	c, err := newCgroupContainment()
	if err == nil {
		return c, nil
	}
	if mode == ContainCgroup {
		return nil, err
	}
	return newPgroupContainment(pgroupAliveProc), nil
}

// pgroupAliveProc reports whether any process that is not a zombie has the
// given process group, by reading /proc. kill(-pgid, 0) would count zombies,
// which an init that does not reap leaves behind.
func pgroupAliveProc(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false // no member at all, not even a zombie
	}
	d, err := os.Open("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pg, _ := strconv.Atoi(f[2]); pg == pgid {
			return true
		}
	}
	return false
}
