//go:build linux

package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
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

// cgroupContainment puts each command into a leaf of a cgroup v2 directory
// made for this executor under the executor's own cgroup (CLONE_INTO_CGROUP,
// so not even the first instruction of the shell runs outside it). A leaf
// holds every descendant, whatever it does with sessions and process groups;
// "populated 0" in its cgroup.events says when the last one has exited, and
// cgroup.kill stops all of them at once. Empty leaves are kept for reuse (up
// to maxFreeLeaves), since making and removing a cgroup costs about a tenth
// of a short command's run.
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

// leafDir is one leaf cgroup, open and watched, reused across commands.
type leafDir struct {
	dir, rel string
	fd       int      // the directory, for CgroupFD
	events   *os.File // its cgroup.events, re-read with pread
	// killed is set once cgroup.kill was written. Such a leaf is never
	// reused: on Linux 6.18, at least, every process later cloned into a
	// leaf that was once killed is killed at birth.
	killed atomic.Bool
}

func newCgroupContainment() (*cgroupContainment, error) {
	home, err := ownCgroupHome()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("dsh-%d-%s", os.Getpid(), randomHex(4))
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

func (c *cgroupContainment) kind() string { return "cgroup" }

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
	name := "c" + strconv.FormatInt(c.seq.Add(1), 10)
	d := &leafDir{dir: filepath.Join(c.dir, name), rel: filepath.Join(c.rel, name), fd: -1}
	if err := os.Mkdir(d.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a cgroup for the command: %w", err)
	}
	fd, err := unix.Open(d.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.destroy(d)
		return nil, fmt.Errorf("open the command's cgroup: %w", err)
	}
	d.fd = fd
	if d.events, err = os.Open(filepath.Join(d.dir, "cgroup.events")); err != nil {
		c.destroy(d)
		return nil, fmt.Errorf("open the command's cgroup.events: %w", err)
	}
	return d, nil
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
	err := os.Remove(d.dir)
	return err == nil || errors.Is(err, os.ErrNotExist)
}

func (c *cgroupContainment) prepare(attr *syscall.SysProcAttr) (group, error) {
	d, err := c.leaf()
	if err != nil {
		return nil, err
	}
	l := &cgLeaf{c: c, d: d, gone: newOnceChan()}
	attr.UseCgroupFD = true
	attr.CgroupFD = d.fd
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
	if err := os.Remove(c.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
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

func (l *cgLeaf) started(pid int, err error) {
	if err != nil {
		l.clean.Store(true)
		l.gone.close()
	}
}

// check closes gone once the leaf is seen empty.
func (l *cgLeaf) check() {
	if populated, err := l.populated(); err != nil || !populated {
		l.clean.Store(err == nil)
		l.gone.close()
	}
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
// does it watch the file (the watch goes with the use: an idle watched leaf
// would wake the watcher at every command). It reads once more after adding
// the watch, to catch a change between the two.
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
// reused by an unrelated process is never signalled. It repeats until a pass
// finds no process it has not signalled, to catch children forked meanwhile.
func (l *cgLeaf) signalEach(sig syscall.Signal) {
	done := map[int]bool{}
	want := "0::" + l.d.rel + "\n"
	for range 16 {
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

// cgWatcher hears cgroup.events change for every leaf of an executor
// through one inotify descriptor and one goroutine.
type cgWatcher struct {
	f    *os.File
	raw  syscall.RawConn
	mu   sync.Mutex
	wds  map[int]*cgLeaf
	done chan struct{}
}

func newCgWatcher() (*cgWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch cgroups: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("watch cgroups: %w", err)
	}
	w := &cgWatcher{f: f, raw: raw, wds: map[int]*cgLeaf{}, done: make(chan struct{})}
	go w.loop()
	return w, nil
}

func (w *cgWatcher) add(path string) (int, error) {
	var wd int
	var err error
	if cerr := w.raw.Control(func(fd uintptr) {
		wd, err = unix.InotifyAddWatch(int(fd), path, unix.IN_MODIFY)
	}); cerr != nil {
		return 0, cerr
	}
	return wd, err
}

func (w *cgWatcher) rm(wd int) {
	w.bind(wd, nil)
	_ = w.raw.Control(func(fd uintptr) { unix.InotifyRmWatch(int(fd), uint32(wd)) })
}

// bind routes the watch's events to l (nil: nobody).
func (w *cgWatcher) bind(wd int, l *cgLeaf) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l == nil {
		delete(w.wds, wd)
	} else {
		w.wds[wd] = l
	}
}

func (w *cgWatcher) loop() {
	defer close(w.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			w.mu.Lock()
			l := w.wds[int(ev.Wd)]
			w.mu.Unlock()
			if l != nil {
				l.check()
			}
		}
	}
}

func (w *cgWatcher) close() {
	w.f.Close()
	<-w.done
}
