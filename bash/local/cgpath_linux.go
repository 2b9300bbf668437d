//go:build linux

package local

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
)

// cgroupHome is where this process's cgroup v2 directory is: dir in the file
// system, rel as /proc/PID/cgroup names it.
type cgroupHome struct{ dir, rel string }

// ownCgroupHome finds this process's cgroup v2 directory from
// /proc/self/mountinfo and /proc/self/cgroup.
func ownCgroupHome() (cgroupHome, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return cgroupHome{}, fmt.Errorf("read mounts: %w", err)
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroupHome{}, fmt.Errorf("read our cgroup: %w", err)
	}
	return parseCgroupHome(string(mi), string(cg))
}

// parseCgroupHome maps the v2 line of a /proc/PID/cgroup text ("0::/a/b")
// onto the first cgroup2 mount of a /proc/PID/mountinfo text. It is a pure
// function, for tests.
func parseCgroupHome(mountinfo, cgroup string) (cgroupHome, error) {
	m, err := parseCgroup2Mount(mountinfo)
	if err != nil {
		return cgroupHome{}, err
	}
	rel := ""
	for line := range strings.Lines(cgroup) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			rel = p
		}
	}
	if !strings.HasPrefix(rel, "/") {
		return cgroupHome{}, errors.New("this process is in no cgroup v2 hierarchy")
	}
	// A mount of part of the hierarchy shows only what is under its root.
	under, ok := strings.CutPrefix(rel, m.root)
	if m.root == "/" {
		under, ok = rel, true
	}
	if !ok || (under != "" && under[0] != '/') {
		return cgroupHome{}, fmt.Errorf("our cgroup %s is not under the cgroup2 mount at %s (root %s)", rel, m.point, m.root)
	}
	return cgroupHome{dir: path.Join(m.point, under), rel: rel}, nil
}

// cgroupMount is a cgroup2 mount: point is where it is mounted, root the
// directory of the hierarchy that appears there ("/" unless only part of it
// is mounted).
type cgroupMount struct{ point, root string }

// parseCgroup2Mount finds the first cgroup2 file system in a
// /proc/PID/mountinfo text. Each line reads
// `id parent major:minor root mountpoint options [tags…] - fstype source opts`,
// with spaces, tabs, newlines and backslashes in paths escaped in octal.
func parseCgroup2Mount(mountinfo string) (cgroupMount, error) {
	for line := range strings.Lines(mountinfo) {
		pre, post, ok := strings.Cut(strings.TrimRight(line, "\n"), " - ")
		if !ok {
			continue
		}
		fs, f := strings.Fields(post), strings.Fields(pre)
		if len(fs) == 0 || fs[0] != "cgroup2" || len(f) < 5 {
			continue
		}
		return cgroupMount{point: unescapeMountField(f[4]), root: unescapeMountField(f[3])}, nil
	}
	return cgroupMount{}, errors.New("no cgroup v2 file system is mounted")
}

// unescapeMountField undoes mountinfo's octal escapes (`\040` for a space).
func unescapeMountField(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
