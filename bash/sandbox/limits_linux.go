package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// limiter puts each jail in cgroups of its own in the cgroup v1 memory,
// pids and cpu hierarchies, with the session's limits, where the host
// mounts them (hybrid hosts, where cgroup v2 has no controllers) and lets
// us write there. The jail's every process is born into them: bwrap is
// forked from a thread of ours moved into them for the fork, and moved
// back after (v1 membership is per thread, and a child inherits its parent
// thread's).
type limiter struct {
	limits Limits
	dirs   jailCgroups // our directory in each hierarchy; "" if none

	next atomic.Uint64
}

// The v1 controllers a jail gets a cgroup of, in the order of jailCgroups.
const (
	ctlMemory = iota
	ctlPids
	ctlCPU
	numCtl
)

// controllers names them, and the file of each that holds the jail's limit.
var controllers = [numCtl]struct{ name, file string }{
	ctlMemory: {"memory", "memory.limit_in_bytes"},
	ctlPids:   {"pids", "pids.max"},
	// Every jail has the same weight: a session's CPU time is shared
	// among its processes, however many it starts, not taken from the
	// other sessions'.
	ctlCPU: {"cpu", "cpu.shares"},
}

// jailCgroups are a directory in each controller's hierarchy ("" where it
// is missing or unused).
type jailCgroups [numCtl]string

// limit is the value of controller c's limit file for a jail; a negative
// one means the controller is not used.
func (l Limits) limit(c int) int64 {
	switch c {
	case ctlMemory:
		return l.Memory
	case ctlPids:
		return int64(l.Pids)
	}
	return cpuShares
}

// cpuShares is every jail's cpu.shares: the kernel's default weight.
const cpuShares = 1024

// newLimiter makes the executor's directories in the v1 hierarchies; err
// says why there are none (the limits then do not apply).
func newLimiter(l Limits) (*limiter, error) {
	lm := &limiter{limits: l.withDefaults(memTotal())}
	// This thread's cgroups, not /proc/self's (the main thread's): another
	// executor's startIn may have moved the main thread into a jail's for
	// the while, and this one's directories would be made in that jail's.
	runtime.LockOSThread()
	mounts, own, err := cgroupFiles("/proc/thread-self/cgroup")
	runtime.UnlockOSThread()
	if err != nil {
		return lm, err
	}
	// Stamped, as the jails' directory is, for CleanStale; and unique: a
	// process may run several executors.
	pattern := strings.Replace(jailsPrefix(), "dsh-jails-", "dsh-limits-", 1) + "*"
	var errs []error
	for c, ctl := range controllers {
		if lm.limits.limit(c) < 0 {
			continue
		}
		dir, err := v1Dir(mounts, own, ctl.name)
		if err == nil {
			dir, err = os.MkdirTemp(dir, pattern)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cgroup v1 %s: %w", ctl.name, err))
			continue
		}
		lm.dirs[c] = dir
	}
	return lm, errors.Join(errs...)
}

// cgroupFiles reads this process's mount table and the cgroup file at path
// (/proc/self/cgroup, or a thread's).
func cgroupFiles(path string) (mountinfo, cgroup string, err error) {
	m, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	c, err := os.ReadFile(path)
	return string(m), string(c), err
}

// v1Dir is where this process's cgroup of the v1 hierarchy with controller
// ctrl lies, from /proc/self/mountinfo and /proc/self/cgroup.
func v1Dir(mountinfo, cgroup, ctrl string) (string, error) {
	var rel string
	for line := range strings.Lines(cgroup) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) == 3 && f[0] != "0" && slices.Contains(strings.Split(f[1], ","), ctrl) {
			rel = f[2]
		}
	}
	if rel == "" {
		return "", errors.New("not mounted")
	}
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || g[0] != "cgroup" || !slices.Contains(strings.Split(g[2], ","), ctrl) {
			continue
		}
		under, ok := strings.CutPrefix(rel, strings.TrimSuffix(f[3], "/"))
		if !ok || under != "" && !strings.HasPrefix(under, "/") {
			return "", fmt.Errorf("our cgroup %s is outside the mount of %s", rel, f[3])
		}
		return filepath.Join(f[4], under), nil
	}
	return "", errors.New("not mounted")
}

// active reports whether any limit applies.
func (lm *limiter) active() bool { return lm != nil && lm.dirs != jailCgroups{} }

// make makes a jail's cgroups with the limits; a warm jail's (warm) with
// the least CPU weight, idleCPUShares, until a session claims it
// (claimCPU): it starts on what CPU the sessions leave.
func (lm *limiter) make(warm bool) (jailCgroups, error) {
	var cg jailCgroups
	if !lm.active() {
		return cg, nil
	}
	name := "jail-" + strconv.FormatUint(lm.next.Add(1), 10)
	for c, dir := range lm.dirs {
		if dir == "" {
			continue
		}
		v := lm.limits.limit(c)
		if c == ctlCPU && warm {
			v = idleCPUShares
		}
		if err := mkLimited(filepath.Join(dir, name), controllers[c].file, v); err != nil {
			cg.remove()
			return jailCgroups{}, err
		}
		cg[c] = filepath.Join(dir, name)
	}
	return cg, nil
}

func mkLimited(dir, file string, v int64) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("make the session's cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0); err != nil {
		os.Remove(dir)
		return fmt.Errorf("set the session's limit (%s): %w", file, err)
	}
	return nil
}

// idleCPUShares is the cpu.shares of a warm jail until its claim: the
// least the kernel takes.
const idleCPUShares = 2

// claimCPU gives a claimed warm jail's cgroup a session's CPU weight.
func (cg jailCgroups) claimCPU() error {
	if cg[ctlCPU] == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(cg[ctlCPU], controllers[ctlCPU].file), []byte(strconv.Itoa(cpuShares)), 0); err != nil {
		return fmt.Errorf("set the session's CPU weight: %w", err)
	}
	return nil
}

// startIn runs start, which forks the jail's first process, on the
// calling thread, locked to its goroutine (the spawner's), moved into cg
// for the while. stuck says the thread stays in cg: it must start nothing
// more.
func (lm *limiter) startIn(cg jailCgroups, start func() error) (err error, stuck bool) {
	if cg == (jailCgroups{}) {
		return start(), false
	}
	tid := unix.Gettid()
	back, err := threadCgroups(tid, cg)
	if err == nil {
		err = moveThread(tid, cg)
	}
	if err != nil {
		return fmt.Errorf("enter the session's cgroups: %w", err), false
	}
	serr := start()
	if err := moveThread(tid, back); err != nil {
		return errors.Join(serr, fmt.Errorf("leave the session's cgroups: %w", err)), true
	}
	return serr, false
}

// threadCgroups is where thread tid is now in the hierarchies where jail
// has a cgroup.
func threadCgroups(tid int, jail jailCgroups) (jailCgroups, error) {
	mounts, own, err := cgroupFiles("/proc/self/task/" + strconv.Itoa(tid) + "/cgroup")
	if err != nil {
		return jailCgroups{}, err
	}
	var cg jailCgroups
	var errs []error
	for c, ctl := range controllers {
		if jail[c] == "" {
			continue
		}
		if cg[c], err = v1Dir(mounts, own, ctl.name); err != nil {
			errs = append(errs, err)
		}
	}
	return cg, errors.Join(errs...)
}

// moveThread moves thread tid into cg's cgroups.
func moveThread(tid int, cg jailCgroups) error {
	for _, dir := range cg {
		if dir == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid)), 0); err != nil {
			return err
		}
	}
	return nil
}

// oomKills is how many processes the memory limit of cg has killed.
func (cg jailCgroups) oomKills() uint64 {
	if cg[ctlMemory] == "" {
		return 0
	}
	b, _ := os.ReadFile(filepath.Join(cg[ctlMemory], "memory.oom_control"))
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("oom_kill ")); ok {
			n, _ := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n
		}
	}
	return 0
}

// remove removes cg's cgroups, which must be empty.
func (cg jailCgroups) remove() error {
	var errs []error
	for _, dir := range cg {
		if dir != "" {
			if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove the session's cgroup %s: %w", dir, err))
			}
		}
	}
	return errors.Join(errs...)
}

// close removes the executor's directories, with the jails' that were
// still busy when their jails closed. What the kernel has still not
// released is left to CleanStale, which removes it once this process is
// gone: empty cgroups hold nothing.
func (lm *limiter) close() error {
	if lm == nil {
		return nil
	}
	for _, dir := range lm.dirs {
		if dir == "" {
			continue
		}
		entries, _ := os.ReadDir(dir)
		for _, ent := range entries {
			if ent.IsDir() {
				_ = unix.Rmdir(filepath.Join(dir, ent.Name()))
			}
		}
		_ = unix.Rmdir(dir)
	}
	return nil
}

// memTotal is the machine's memory in bytes (0 if unknown).
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("MemTotal:")); ok {
			kb, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			return kb << 10
		}
	}
	return 0
}
