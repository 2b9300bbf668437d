//go:build linux

package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
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
// cgroup.kill stops all of them at once.
type cgroupContainment struct {
	dir string // the executor's directory in the cgroup file system
	rel string // the same directory as /proc/PID/cgroup names it
	seq atomic.Int64
	w   *cgWatcher
}

func newCgroupContainment() (*cgroupContainment, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read our cgroup: %w", err)
	}
	var own string
	for line := range strings.Lines(string(self)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			own = p
		}
	}
	if own == "" {
		return nil, errors.New("this process is in no cgroup v2 hierarchy")
	}
	name := fmt.Sprintf("dsh-%d-%s", os.Getpid(), randomHex(4))
	dir := filepath.Join(mount, own, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a cgroup for commands: %w", err)
	}
	w, err := newCgWatcher()
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &cgroupContainment{dir: dir, rel: filepath.Join(own, name), w: w}, nil
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [tags] - fstype source opts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup2" {
			if f := strings.Fields(pre); len(f) >= 5 {
				return f[4], nil
			}
		}
	}
	return "", errors.New("no cgroup v2 file system is mounted")
}

func (c *cgroupContainment) kind() string { return "cgroup" }

func (c *cgroupContainment) prepare(attr *syscall.SysProcAttr) (group, error) {
	name := "c" + strconv.FormatInt(c.seq.Add(1), 10)
	dir := filepath.Join(c.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a cgroup for the command: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("open the command's cgroup: %w", err)
	}
	attr.UseCgroupFD = true
	attr.CgroupFD = fd
	return &cgLeaf{c: c, dir: dir, rel: filepath.Join(c.rel, name), fd: fd, gone: newOnceChan()}, nil
}

func (c *cgroupContainment) close() error {
	c.w.close()
	if err := os.Remove(c.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the executor's cgroup: %w", err)
	}
	return nil
}

// cgLeaf is the cgroup of one command.
type cgLeaf struct {
	c    *cgroupContainment
	dir  string
	rel  string
	fd   int
	gone *onceChan
	wd   int
}

func (l *cgLeaf) started(pid int, err error) {
	unix.Close(l.fd)
	if err != nil {
		l.gone.close()
		return
	}
	if err := l.c.w.add(l); err != nil {
		// Without a watch we cannot hear the leaf empty; trust the shell's
		// own exit instead of waiting forever.
		l.gone.close()
		return
	}
	l.check()
}

// check reads cgroup.events and closes gone once the leaf is empty.
func (l *cgLeaf) check() {
	b, err := os.ReadFile(filepath.Join(l.dir, "cgroup.events"))
	if err != nil || bytes.Contains(b, []byte("populated 0")) {
		l.c.w.remove(l)
		l.gone.close()
	}
}

func (l *cgLeaf) empty() <-chan struct{} { return l.gone.c }

func (l *cgLeaf) signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		if err := os.WriteFile(filepath.Join(l.dir, "cgroup.kill"), []byte("1"), 0); err == nil {
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
	want := "0::" + l.rel + "\n"
	for range 16 {
		b, err := os.ReadFile(filepath.Join(l.dir, "cgroup.procs"))
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

func (l *cgLeaf) release() {
	l.c.w.remove(l)
	os.Remove(l.dir)
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

func (w *cgWatcher) add(l *cgLeaf) error {
	var wd int
	var err error
	cerr := w.raw.Control(func(fd uintptr) {
		wd, err = unix.InotifyAddWatch(int(fd), filepath.Join(l.dir, "cgroup.events"), unix.IN_MODIFY)
	})
	if err = errors.Join(cerr, err); err != nil {
		return err
	}
	w.mu.Lock()
	l.wd = wd
	w.wds[wd] = l
	w.mu.Unlock()
	return nil
}

func (w *cgWatcher) remove(l *cgLeaf) {
	w.mu.Lock()
	wd := l.wd
	if wd <= 0 || w.wds[wd] != l {
		w.mu.Unlock()
		return
	}
	delete(w.wds, wd)
	l.wd = 0
	w.mu.Unlock()
	_ = w.raw.Control(func(fd uintptr) { unix.InotifyRmWatch(int(fd), uint32(wd)) })
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
