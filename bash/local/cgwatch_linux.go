//go:build linux

package local

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

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
