//go:build linux

package local

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// cgroupContainment puts each command into a leaf of a cgroup v2 directory
// made for this executor under the executor's own cgroup (CLONE_INTO_CGROUP,
// so not even the first instruction of the shell runs outside it). A leaf
// holds every descendant, whatever it does with sessions and process groups;
// "populated 0" in its cgroup.events says when the last one has exited, and
// cgroup.kill stops all of them at once.
//
// Empty leaves are kept for reuse (up to maxFreeLeaves): making and removing
// a cgroup for every command costs about 5 % of a short command's run. But
// once anyone has written to a leaf's cgroup.kill (we do, to stop a command;
// so can a command, to its own leaf or to any other), Linux (6.18 at least)
// kills every process later cloned into it before its first instruction,
// and such a write leaves no trace on the leaf. So a leaf we killed is never
// reused, and every spawn checks that its shell got to run (see
// cgLeaf.started): one that did not was killed at birth, its leaf and every
// free one are dropped, and the shell is started again in a new leaf. The
// check reads /proc/PID/stat once per spawn, about 2 % of a short command's
// run (most of it the kernel making and dropping /proc/PID for the pid).
type cgroupContainment struct {
	dir string // the executor's directory in the cgroup file system
	rel string // the same directory as /proc/PID/cgroup names it
	seq atomic.Int64
	w   *cgWatcher

	mu    sync.Mutex
	free  []*leafDir
	stuck []*leafDir // not empty when released: removed on close
}

const maxFreeLeaves = 16

// leafDir is one leaf cgroup, open, reused across commands.
type leafDir struct {
	dir, rel string
	fd       int      // the directory, for CgroupFD
	events   *os.File // its cgroup.events, re-read with pread
	// killed is set once cgroup.kill was written by us, or the leaf is
	// suspected of it: it is never reused.
	killed atomic.Bool
}

// newCgroupContainment makes the executor's cgroup directory, named
// dsh-PID-START-RANDOM (see selfStamp and CleanStale).
func newCgroupContainment() (*cgroupContainment, error) {
	home, err := ownCgroupHome()
	if err != nil {
		return nil, err
	}
	name := cgroupDirName()
	dir := filepath.Join(home.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a cgroup for commands: %w", err)
	}
	w, err := newCgWatcher()
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &cgroupContainment{dir: dir, rel: path.Join(home.rel, name), w: w}, nil
}

// cgroupDirName names an executor's cgroup directory, stamped when we can.
func cgroupDirName() string {
	if stamp := selfStamp(); stamp != "" {
		return "dsh-" + stamp + "-" + randomHex(4)
	}
	return fmt.Sprintf("dsh-%d-%s", os.Getpid(), randomHex(4))
}

func (c *cgroupContainment) kind() Containment { return ContainCgroup }

// leaf takes a free leaf or makes one.
func (c *cgroupContainment) leaf() (*leafDir, error) {
	c.mu.Lock()
	if n := len(c.free); n > 0 {
		d := c.free[n-1]
		c.free = c.free[:n-1]
		c.mu.Unlock()
		return d, nil
	}
	c.mu.Unlock()
	return c.makeLeaf()
}

// makeLeaf makes and opens a new leaf; a name someone else took is skipped.
func (c *cgroupContainment) makeLeaf() (*leafDir, error) {
	var err error
	for range 8 {
		name := "c" + strconv.FormatInt(c.seq.Add(1), 10)
		d := &leafDir{dir: filepath.Join(c.dir, name), rel: path.Join(c.rel, name), fd: -1}
		if err = os.Mkdir(d.dir, 0o755); errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("make a cgroup for the command: %w", err)
		}
		if err = c.open(d); err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, fmt.Errorf("make a cgroup for the command: %w", err)
}

// open opens a new leaf's directory and cgroup.events; on failure it
// removes the leaf.
func (c *cgroupContainment) open(d *leafDir) error {
	fd, err := unix.Open(d.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.destroy(d)
		return fmt.Errorf("open the command's cgroup: %w", err)
	}
	d.fd = fd
	if d.events, err = os.Open(filepath.Join(d.dir, "cgroup.events")); err != nil {
		c.destroy(d)
		return fmt.Errorf("open the command's cgroup.events: %w", err)
	}
	return nil
}

// destroy closes and removes a leaf; false if it could not be removed.
func (c *cgroupContainment) destroy(d *leafDir) bool {
	if d.events != nil {
		d.events.Close()
		d.events = nil
	}
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
	return removeCgroupTree(d.dir) == nil
}

// removeCgroupTree removes a cgroup directory and every cgroup under it
// (a command may have made some), deepest first. Their processes must be
// gone.
func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("list the cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, ent := range entries {
		if ent.IsDir() {
			errs = append(errs, removeCgroupTree(filepath.Join(dir, ent.Name())))
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove the cgroup: %w", err))
	}
	return errors.Join(errs...)
}

func (c *cgroupContainment) prepare(req *SpawnRequest) (group, error) {
	d, err := c.leaf()
	if err != nil {
		return nil, err
	}
	l := &cgLeaf{c: c, d: d, gone: newOnceChan()}
	req.CgroupFD = d.fd
	return l, nil
}

func (c *cgroupContainment) close() error {
	c.w.close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.free {
		c.destroy(d)
	}
	c.free = nil
	var errs []error
	for _, d := range c.stuck {
		_ = os.WriteFile(filepath.Join(d.dir, "cgroup.kill"), []byte("1"), 0)
		if !c.destroy(d) {
			errs = append(errs, fmt.Errorf("remove the command cgroup %s: it still holds processes", d.dir))
		}
	}
	c.stuck = nil
	if err := removeCgroupTree(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove the executor's cgroup: %w", err))
	}
	return errors.Join(errs...)
}

// cgLeaf is one command's use of a leaf.
type cgLeaf struct {
	c     *cgroupContainment
	d     *leafDir
	gone  *onceChan
	watch sync.Once
	wd    int         // the inotify watch, when one was needed
	clean atomic.Bool // the leaf was seen empty after the shell started
}

// started checks that the shell got to run. A process cloned into a leaf
// whose cgroup.kill was ever written is killed before its first instruction
// (Linux 6.18), and a write by a command leaves no trace on the leaf. The
// shell's own flags do: PF_FORKNOEXEC is set at the clone and cleared by
// exec, which Start has waited for, and no process can set it again. A
// shell that still has it never ran: its leaf is poisoned, and so may be
// every free one, so they are all dropped.
func (l *cgLeaf) started(pid int, err error) bool {
	if err != nil {
		l.clean.Store(true)
		l.gone.close()
		return false
	}
	unborn, known := forkedNoExec(pid)
	if unborn || !known {
		l.d.killed.Store(true) // never reused
	}
	if unborn {
		l.c.dropFree()
	}
	return unborn
}

// pfForkNoExec is PF_FORKNOEXEC, "forked but did not exec", in
// /proc/PID/stat's flags (include/linux/sched.h).
const pfForkNoExec = 0x40

// forkedNoExec reports whether process pid (a child not reaped yet) has
// never called exec; known is false when /proc cannot tell.
func forkedNoExec(pid int) (unborn, known bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, false
	}
	var buf [1024]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return false, false
	}
	flags, err := parseStatFlags(buf[:n])
	return err == nil && flags&pfForkNoExec != 0, err == nil
}

// parseStatFlags reads field 9, the flags, of a /proc/PID/stat text:
// `pid (comm) state ppid pgrp session tty_nr tpgid flags …`, where comm may
// hold spaces and parentheses.
func parseStatFlags(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 7 {
		return 0, errors.New("short /proc stat")
	}
	return strconv.ParseUint(f[6], 10, 64)
}

// dropFree removes every free leaf: one was found poisoned, so any may be.
func (c *cgroupContainment) dropFree() {
	c.mu.Lock()
	free := c.free
	c.free = nil
	c.mu.Unlock()
	for _, d := range free {
		c.destroy(d)
	}
}

// check closes gone once the leaf is seen empty.
func (l *cgLeaf) check() {
	if populated, err := l.populated(); err != nil || !populated {
		l.clean.Store(err == nil)
		l.gone.close()
	}
}

func (l *cgLeaf) live() bool {
	populated, err := l.populated()
	return err != nil || populated
}

func (l *cgLeaf) populated() (bool, error) {
	var buf [64]byte
	n, err := l.d.events.ReadAt(buf[:], 0)
	if n == 0 && err != nil {
		return false, err
	}
	return !bytes.Contains(buf[:n], []byte("populated 0")), nil
}

// empty is asked once the shell has exited. Most commands leave nothing
// behind, so it reads cgroup.events first, and only when processes remain
// does it watch the file. It reads once more after adding the watch, to
// catch a change between the two.
func (l *cgLeaf) empty() <-chan struct{} {
	l.watch.Do(func() {
		if l.check(); l.clean.Load() {
			return
		}
		wd, err := l.c.w.add(filepath.Join(l.d.dir, "cgroup.events"))
		if err != nil {
			l.gone.close() // nothing to wait with: trust the shell's exit
			return
		}
		l.wd = wd
		l.c.w.bind(wd, l)
		l.check()
	})
	return l.gone.c
}

func (l *cgLeaf) signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		l.d.killed.Store(true)
		if err := os.WriteFile(filepath.Join(l.d.dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
		// No cgroup.kill (kernels before 5.14): signal one by one.
	}
	l.signalEach(sig)
}

// signalEach signals every process listed in the leaf, through a pidfd
// opened before checking that the pid still belongs to the leaf, so a pid
// reused by an unrelated process is never signalled. For SIGKILL it repeats
// until a pass finds no process it has not signalled, to catch children
// forked meanwhile. SIGTERM goes once to each process there is, like a
// signal to a process group: what a TERM trap starts to clean up (a child
// forked after the signal) must not be stopped by the same SIGTERM; the
// escalation's SIGKILL catches whatever is left.
func (l *cgLeaf) signalEach(sig syscall.Signal) {
	done := map[int]bool{}
	want := "0::" + l.d.rel + "\n"
	passes := 1
	if sig == syscall.SIGKILL {
		passes = 16
	}
	for range passes {
		b, err := os.ReadFile(filepath.Join(l.d.dir, "cgroup.procs"))
		if err != nil {
			return
		}
		fresh := false
		for _, s := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(s)
			if err != nil || done[pid] {
				continue
			}
			done[pid], fresh = true, true
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if cg, err := os.ReadFile("/proc/" + s + "/cgroup"); err == nil && bytes.Contains(cg, []byte(want)) {
				_ = unix.PidfdSendSignal(fd, sig, nil, 0)
			}
			unix.Close(fd)
		}
		if !fresh {
			return
		}
	}
}

// release hands the leaf back for reuse once it is empty.
func (l *cgLeaf) release() {
	c := l.c
	if l.wd > 0 {
		c.w.rm(l.wd)
	}
	clean := l.clean.Load()
	if !clean {
		populated, err := l.populated()
		clean = err == nil && !populated
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !clean:
		c.stuck = append(c.stuck, l.d)
	case !l.d.killed.Load() && len(c.free) < maxFreeLeaves:
		c.free = append(c.free, l.d)
	default:
		c.destroy(l.d)
	}
}

// pids lists the processes in the leaf.
func (l *cgLeaf) pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(l.d.dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}
