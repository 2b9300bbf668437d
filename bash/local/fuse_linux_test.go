//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/testwait"
	"golang.org/x/sys/unix"
)

// A task's command may read a file of a FUSE filesystem whose server
// never answers. The probe that tells whether a task waits for input must
// not ask that server anything: were it to stat /proc/PID/fd/N, the stat
// would wait for the server's GETATTR answer, and WriteInput, Get and List
// with it, for ever. The test below serves such a filesystem itself,
// speaking the kernel's FUSE protocol (linux/fuse.h) on /dev/fuse.

// The FUSE opcodes the server knows.
const (
	fuseLookup      = 1
	fuseForget      = 2
	fuseGetattr     = 3
	fuseOpen        = 14
	fuseRead        = 15
	fuseRelease     = 18
	fuseFlush       = 25
	fuseInit        = 26
	fuseInterrupt   = 36
	fuseBatchForget = 42
)

const (
	fuseRootNode  = 1      // the root directory's node id, fixed by the kernel
	fuseFileNode  = 2      // the one file's node id
	fuseFileName  = "file" // the one file's name
	fopenDirectIO = 1      // FOPEN_DIRECT_IO: each read goes to the server
	fuseBufSize   = 1<<20 + 4096
)

// fuseInHeader starts every request (struct fuse_in_header).
type fuseInHeader struct {
	Len           uint32
	Opcode        uint32
	Unique        uint64 // the request's id, which its answer repeats
	NodeID        uint64 // the node the request is about
	UID, GID, PID uint32
	TotalExtLen   uint16
	Padding       uint16
}

// fuseOutHeader starts every answer (struct fuse_out_header).
type fuseOutHeader struct {
	Len    uint32
	Error  int32 // 0, or a negated errno (then nothing follows)
	Unique uint64
}

// fuseInitOut answers INIT (struct fuse_init_out, protocol 7.31 on).
type fuseInitOut struct {
	Major, Minor        uint32
	MaxReadahead        uint32
	Flags               uint32
	MaxBackground       uint16
	CongestionThreshold uint16
	MaxWrite            uint32
	TimeGran            uint32
	MaxPages            uint16
	MapAlignment        uint16
	Flags2              uint32
	MaxStackDepth       uint32
	Unused              [6]uint32
}

// fuseAttr is a node's attributes (struct fuse_attr).
type fuseAttr struct {
	Ino, Size, Blocks               uint64
	Atime, Mtime, Ctime             uint64
	AtimeNsec, MtimeNsec, CtimeNsec uint32
	Mode, Nlink, UID, GID, Rdev     uint32
	Blksize, Flags                  uint32
}

// fuseEntryOut answers LOOKUP (struct fuse_entry_out). Its validity
// times are left 0: the kernel caches nothing, and each stat asks.
type fuseEntryOut struct {
	NodeID, Generation            uint64
	EntryValid, AttrValid         uint64
	EntryValidNsec, AttrValidNsec uint32
	Attr                          fuseAttr
}

// fuseAttrOut answers GETATTR (struct fuse_attr_out), valid for 0 s too.
type fuseAttrOut struct {
	AttrValid     uint64
	AttrValidNsec uint32
	Dummy         uint32
	Attr          fuseAttr
}

// fuseOpenOut answers OPEN (struct fuse_open_out).
type fuseOpenOut struct {
	FH        uint64
	OpenFlags uint32
	BackingID int32
}

// fuseServer serves a filesystem of one file, "file", whose reads it
// never answers; once stalled, it answers no GETATTR either.
type fuseServer struct {
	t       testing.TB
	dir     string        // the mount point
	dev     *os.File      // /dev/fuse, non-blocking: Close wakes the reader
	done    chan struct{} // closed when serve returns
	reading chan struct{} // closed at the first READ
	once    sync.Once     // closes reading
	stop    sync.Once     // runs close

	mu      sync.Mutex
	stall   bool     // hold every GETATTR from now on
	held    []uint64 // the requests held unanswered
	stalled int      // how many GETATTRs were held
}

// mountFuse mounts a fuseServer's filesystem under a temporary directory;
// the test is skipped where this process may not.
func mountFuse(t *testing.T) *fuseServer {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Skipf("no FUSE here: open /dev/fuse: %v", err)
	}
	dir := t.TempDir()
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d", fd, os.Getuid(), os.Getgid())
	if err := unix.Mount("fuse", dir, "fuse", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) {
			t.Skipf("this process may not mount a FUSE filesystem: %v", err)
		}
		t.Fatalf("mount FUSE on %s: %v", dir, err)
	}
	s := &fuseServer{
		t: t, dir: dir, dev: os.NewFile(uintptr(fd), "/dev/fuse"),
		done: make(chan struct{}), reading: make(chan struct{}),
	}
	go s.serve()
	t.Cleanup(s.close)
	return s
}

// serve reads the kernel's requests and answers them, until the device
// is closed or the connection ends.
func (s *fuseServer) serve() {
	defer close(s.done)
	buf := make([]byte, fuseBufSize)
	for {
		n, err := s.dev.Read(buf)
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ENOENT):
			continue // a request withdrawn while it was read
		case err != nil:
			return // closed (os.ErrClosed), or the connection is gone (ENODEV)
		}
		s.handle(buf[:n])
	}
}

// handle answers one request.
func (s *fuseServer) handle(req []byte) {
	var h fuseInHeader
	if binary.Read(bytes.NewReader(req), binary.NativeEndian, &h) != nil {
		return
	}
	body := req[binary.Size(h):]
	switch h.Opcode {
	case fuseInit:
		s.reply(h.Unique, 0, initOut(body))
	case fuseLookup:
		name, _, _ := bytes.Cut(body, []byte{0})
		if h.NodeID != fuseRootNode || string(name) != fuseFileName {
			s.reply(h.Unique, -int32(unix.ENOENT), nil)
			return
		}
		s.reply(h.Unique, 0, fuseEntryOut{NodeID: fuseFileNode, Attr: nodeAttr(fuseFileNode)})
	case fuseGetattr:
		if h.NodeID != fuseRootNode && h.NodeID != fuseFileNode {
			s.reply(h.Unique, -int32(unix.ENOENT), nil)
		} else if !s.hold(h.Unique, true) {
			s.reply(h.Unique, 0, fuseAttrOut{Attr: nodeAttr(h.NodeID)})
		}
	case fuseOpen:
		s.reply(h.Unique, 0, fuseOpenOut{OpenFlags: fopenDirectIO})
	case fuseRead:
		s.hold(h.Unique, false)
		s.once.Do(func() { close(s.reading) })
	case fuseFlush, fuseRelease:
		s.reply(h.Unique, 0, nil)
	case fuseForget, fuseBatchForget, fuseInterrupt:
		// No answer is expected; an interrupted READ stays held.
	default:
		s.reply(h.Unique, -int32(unix.ENOSYS), nil)
	}
}

// initOut answers the kernel's INIT (struct fuse_init_in: major, minor,
// max_readahead, flags, …) with protocol 7, no optional features.
func initOut(in []byte) fuseInitOut {
	out := fuseInitOut{Major: 7, Minor: 31, MaxWrite: 1 << 16}
	if len(in) >= 12 {
		out.Minor = min(out.Minor, binary.NativeEndian.Uint32(in[4:]))
		out.MaxReadahead = binary.NativeEndian.Uint32(in[8:])
	}
	return out
}

// nodeAttr is the attributes of the root directory or of the file.
func nodeAttr(node uint64) fuseAttr {
	a := fuseAttr{Ino: node, Mode: unix.S_IFREG | 0o444, Nlink: 1, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if node == fuseRootNode {
		a.Mode, a.Nlink = unix.S_IFDIR|0o755, 2
	}
	return a
}

// hold keeps request unique unanswered: every READ, and a GETATTR once
// stalled. It reports whether it did.
func (s *fuseServer) hold(unique uint64, getattr bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if getattr && !s.stall {
		return false
	}
	if getattr {
		s.stalled++
	}
	s.held = append(s.held, unique)
	return true
}

// reply answers request unique with errno (negated) or with body.
func (s *fuseServer) reply(unique uint64, errno int32, body any) {
	var payload []byte
	if body != nil {
		payload, _ = binary.Append(nil, binary.NativeEndian, body)
	}
	h := fuseOutHeader{Len: uint32(16 + len(payload)), Error: errno, Unique: unique}
	out, _ := binary.Append(nil, binary.NativeEndian, h)
	// An error is the kernel's: a request withdrawn, or the connection gone.
	_, _ = s.dev.Write(append(out, payload...))
}

// stallGetattr makes the server hold every GETATTR from now on.
func (s *fuseServer) stallGetattr() {
	s.mu.Lock()
	s.stall = true
	s.mu.Unlock()
}

// stalledGetattrs is how many GETATTRs the server holds.
func (s *fuseServer) stalledGetattrs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// close fails every held request with EIO, closes /dev/fuse (its last
// descriptor: the kernel aborts the connection, failing whatever else
// waits on the server) and unmounts the filesystem. Safe to call twice.
func (s *fuseServer) close() {
	s.stop.Do(func() {
		s.mu.Lock()
		held := s.held
		s.held = nil
		s.mu.Unlock()
		for _, unique := range held {
			s.reply(unique, -int32(unix.EIO), nil)
		}
		s.dev.Close()
		if _, err := testwait.Wait(s.done, "end of the FUSE server"); err != nil {
			s.t.Error(err)
		}
		if err := unix.Unmount(s.dir, unix.MNT_DETACH); err != nil {
			s.t.Errorf("unmount %s: %v", s.dir, err)
		}
	})
}

// fuseCallLimit bounds each call of the executor's the test makes; a
// probe that stays off the FUSE filesystem answers far sooner.
const fuseCallLimit = 10 * time.Second

// TestFuseProbe: a task whose command (cat) is blocked reading a file of
// a FUSE filesystem, whose server then answers no GETATTR, neither holds
// WriteInput nor Get: the probe tells cat's descriptor from the task's
// input without asking the filesystem, and says the task does not wait
// for input. The stall itself is real: a stat through /proc/PID/fd,
// what the probe must not do, is held by the server.
func TestFuseProbe(t *testing.T) {
	fs := mountFuse(t)
	e := newExec(t, nil)
	id, pid := startFuseReader(t, e, fs)
	testwait.Recv(t, fs.reading, "READ of the FUSE file from cat")
	waitReadBlocked(t, pid, 3)
	fs.stallGetattr()

	var r bash.TaskRead
	var task bash.Task
	var errRead, errGet error
	callWithin(t, fs, "WriteInput", func(ctx context.Context) {
		r, errRead = e.WriteInput(ctx, id, bash.Input{Wait: 500 * time.Millisecond})
	})
	callWithin(t, fs, "Get", func(ctx context.Context) { task, errGet = e.Get(ctx, id) })
	if errRead != nil || errGet != nil {
		t.Fatalf("WriteInput: %v; Get: %v", errRead, errGet)
	}
	if r.Task.WaitingInput || task.WaitingInput {
		t.Errorf("cat reads a FUSE file, not its input, yet the task waits for input (WriteInput %v, Get %v)", r.Task.WaitingInput, task.WaitingInput)
	}
	if n := fs.stalledGetattrs(); n > 0 {
		t.Errorf("the server got %d GETATTR requests while WriteInput and Get ran", n)
	}
	checkStatHeld(t, fs, pid, 3)
}

// startFuseReader starts, with its input open, a task that prints its
// pid to stderr and becomes cat of the FUSE file; it returns the task and
// cat's pid.
func startFuseReader(t *testing.T, e *Executor, fs *fuseServer) (bash.TaskID, int) {
	cmd := fmt.Sprintf("echo $$ >&2; exec cat %q", filepath.Join(fs.dir, fuseFileName))
	spec, err := e.Resolve(context.Background(), bash.ExecRequest{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	spec.Input = true
	task, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fs.close() // first: a killed cat still waits for its READ's answer
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
		defer cancel()
		if _, err := e.Kill(ctx, task.ID); err != nil {
			t.Errorf("Kill: %v", err)
		}
	})
	return task.ID, readStderrPid(t, e, task.ID)
}

// readStderrPid reads the task's stderr until it holds a line, the pid.
func readStderrPid(t *testing.T, e *Executor, id bash.TaskID) int {
	tk, err := e.lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, tk.ready, "start of the task")
	var stderr string
	for !strings.Contains(stderr, "\n") {
		ch := tk.p.errs.changed()
		r, err := e.ReadOutput(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		stderr += r.Stderr.Text
		if !strings.Contains(stderr, "\n") {
			testwait.Recv(t, ch, "the task's pid on its stderr")
		}
	}
	pid, err := strconv.Atoi(strings.TrimSpace(stderr))
	if err != nil {
		t.Fatalf("the task's stderr, %q, is not its pid", stderr)
	}
	return pid
}

// waitReadBlocked waits until process pid sleeps in read(2) of fd.
func waitReadBlocked(t *testing.T, pid, fd int) {
	dir := "/proc/" + strconv.Itoa(pid)
	want := fmt.Sprintf("%d %#x ", unix.SYS_READ, fd)
	deadline := time.Now().Add(testwait.Limit)
	for {
		sc, _ := os.ReadFile(dir + "/syscall")
		stat, _ := os.ReadFile(dir + "/stat")
		if strings.HasPrefix(string(sc), want) && strings.Contains(string(stat), ") S ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cat (pid %d) never slept in read(2) of descriptor %d: syscall %q, stat %q", pid, fd, sc, stat)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// callWithin runs call with a context of fuseCallLimit, and fails the
// test if it has not returned by then: it waits on the FUSE server. The
// server is then closed, which frees the call, and the test ends once
// the call has returned.
func callWithin(t *testing.T, fs *fuseServer, what string, call func(context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), fuseCallLimit)
	defer cancel()
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(done)
		call(ctx)
	}()
	timer := time.NewTimer(fuseCallLimit)
	defer timer.Stop()
	select {
	case <-done:
		t.Logf("%s returned in %v", what, time.Since(begin).Round(time.Millisecond))
		return
	case <-timer.C:
	}
	t.Errorf("%s did not return within %v: it waits on the FUSE server, which holds %d GETATTR requests", what, fuseCallLimit, fs.stalledGetattrs())
	fs.close()
	testwait.Recv(t, done, "return of "+what+" once the FUSE connection was closed")
	t.FailNow()
}

// checkStatHeld proves the stall: a stat of /proc/PID/fd/FD, what the
// probe avoids, reaches the server and is held until the server closes.
func checkStatHeld(t *testing.T, fs *fuseServer, pid, fd int) {
	before := fs.stalledGetattrs()
	done := make(chan error, 1)
	go func() {
		var st unix.Stat_t
		done <- unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), &st)
	}()
	deadline := time.Now().Add(testwait.Limit)
	for fs.stalledGetattrs() == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Errorf("a stat of cat's descriptor %d was not held by the server: %v", fd, err)
		return
	default:
	}
	if fs.stalledGetattrs() == before {
		t.Errorf("a stat of cat's descriptor %d never reached the server", fd)
	}
	fs.close()
	testwait.Recv(t, done, "return of the stat once the FUSE connection was closed")
}
