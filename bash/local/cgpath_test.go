//go:build linux

package local

import (
	"os"
	"testing"
)

// Mount lines as Linux writes them in /proc/PID/mountinfo.
const (
	tmpfsLine   = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	v1CPULine   = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	v1PidsLine  = "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime shared:5 - cgroup cgroup rw,pids\n"
	hybridLine  = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	pureV2Line  = "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	rootLine    = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	escapedLine = "50 22 0:40 / /mnt/my\\040cgroups\\011x\\134y rw - cgroup2 none rw\n"
	subtreeLine = "60 22 0:30 /system.slice/app.service /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
)

func TestParseCgroupHome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, mountinfo, cgroup string
		dir, rel, err           string
	}{
		{name: "pure v2", mountinfo: rootLine + pureV2Line, cgroup: "0::/user.slice/session-1.scope\n",
			dir: "/sys/fs/cgroup/user.slice/session-1.scope", rel: "/user.slice/session-1.scope"},
		{name: "hybrid", mountinfo: rootLine + tmpfsLine + v1CPULine + hybridLine + v1PidsLine,
			cgroup: "9:name=systemd:/\n1:cpu:/\n0::/\n", dir: "/sys/fs/cgroup/unified", rel: "/"},
		{name: "hybrid, nested", mountinfo: tmpfsLine + hybridLine, cgroup: "1:cpu:/x\n0::/a/b\n",
			dir: "/sys/fs/cgroup/unified/a/b", rel: "/a/b"},
		{name: "v1 only", mountinfo: rootLine + tmpfsLine + v1CPULine + v1PidsLine, cgroup: "1:cpu:/\n",
			err: "no cgroup v2 file system is mounted"},
		{name: "escaped mount point", mountinfo: rootLine + escapedLine, cgroup: "0::/c\n",
			dir: "/mnt/my cgroups\tx\\y/c", rel: "/c"},
		{name: "part of the hierarchy mounted", mountinfo: subtreeLine, cgroup: "0::/system.slice/app.service/w\n",
			dir: "/sys/fs/cgroup/w", rel: "/system.slice/app.service/w"},
		{name: "outside the mounted part", mountinfo: subtreeLine, cgroup: "0::/system.slice/app.serviceX\n",
			err: "our cgroup /system.slice/app.serviceX is not under the cgroup2 mount at /sys/fs/cgroup (root /system.slice/app.service)"},
		{name: "no v2 line", mountinfo: hybridLine, cgroup: "1:cpu:/\n", err: "this process is in no cgroup v2 hierarchy"},
		{name: "no final newline", mountinfo: "41 31 0:38 / /cg rw - cgroup2 cgroup2 rw", cgroup: "0::/q", dir: "/cg/q", rel: "/q"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := parseCgroupHome(tc.mountinfo, tc.cgroup)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil || h.dir != tc.dir || h.rel != tc.rel {
				t.Errorf("= %+v, %v; want dir %q rel %q", h, err, tc.dir, tc.rel)
			}
		})
	}
}

// TestContainmentKind: where this process finds a cgroup2 mount it may
// write to (as root), the executor must use cgroups, as production does.
func TestContainmentKind(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	home, err := ownCgroupHome()
	if err != nil {
		t.Logf("no cgroup v2 here: %v", err)
		return
	}
	if os.Geteuid() == 0 && e.Containment() != ContainCgroup {
		t.Errorf("a cgroup2 hierarchy is mounted for us at %s and we are root, yet containment is %q", home.dir, e.Containment())
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	// A comm can hold spaces and parentheses: only the last ')' ends it.
	stat := "4242 (a) b (c) R 1 4242 4242 0 -1 4194368 120 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615\n"
	if flags, err := parseStatFlags([]byte(stat)); err != nil || flags != 4194368 || flags&pfForkNoExec == 0 {
		t.Errorf("flags = %d, %v", flags, err)
	}
	if start, err := parseStartTime([]byte(stat)); err != nil || start != 987654 {
		t.Errorf("start time = %d, %v", start, err)
	}
	for _, bad := range []string{"4242 no parens R 1", "4242 (x) R 1 2"} {
		if _, err := parseStatFlags([]byte(bad)); err == nil {
			t.Errorf("parseStatFlags(%q) accepted it", bad)
		}
		if _, err := parseStartTime([]byte(bad)); err == nil {
			t.Errorf("parseStartTime(%q) accepted it", bad)
		}
	}
	// Our own process has run exec: no PF_FORKNOEXEC.
	if unborn, known := forkedNoExec(os.Getpid()); unborn || !known {
		t.Errorf("forkedNoExec(self) = %v, %v", unborn, known)
	}
}
