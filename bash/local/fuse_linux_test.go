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
	"unsafe"

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
	fuseFileNode  = 2      // the node id of the file whose reads are held
	fuseFileName  = "file" // the file whose reads are held
	fuseMemNode   = 3      // the memory file's node id
	fuseMemName   = "mem"  // the memory file's name: a page, a poll set
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

// fuseServer serves a filesystem of two files: "file", whose reads it
// never answers (once stalled, it answers no GETATTR either), and "mem",
// a page read through the page cache, answered until stallMem.
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
	// getattrHeld gets a value each time a GETATTR is held (never
	// blocking the server: it holds more than a test holds).
	getattrHeld chan struct{}

	memStall bool        // hold every READ of "mem" from now on
	memHeld  []uint32    // the pids (threads) of the READs of "mem" held
	memRead  chan uint32 // the pid of the first READ of "mem" answered
	memOnce  sync.Once   // sends it
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
		memRead: make(chan uint32, 1), getattrHeld: make(chan struct{}, 64),
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
		node := map[string]uint64{fuseFileName: fuseFileNode, fuseMemName: fuseMemNode}[string(name)]
		if h.NodeID != fuseRootNode || node == 0 {
			s.reply(h.Unique, -int32(unix.ENOENT), nil)
			return
		}
		s.reply(h.Unique, 0, fuseEntryOut{NodeID: node, Attr: nodeAttr(node)})
	case fuseGetattr:
		if h.NodeID != fuseRootNode && h.NodeID != fuseFileNode && h.NodeID != fuseMemNode {
			s.reply(h.Unique, -int32(unix.ENOENT), nil)
		} else if !s.hold(h.Unique, true) {
			s.reply(h.Unique, 0, fuseAttrOut{Attr: nodeAttr(h.NodeID)})
		}
	case fuseOpen:
		if h.NodeID == fuseMemNode { // through the page cache: it can be mapped
			s.reply(h.Unique, 0, fuseOpenOut{})
			return
		}
		s.reply(h.Unique, 0, fuseOpenOut{OpenFlags: fopenDirectIO})
	case fuseRead:
		if h.NodeID == fuseMemNode {
			s.readMem(h, body)
			return
		}
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

// nodeAttr is the attributes of the root directory or of a file.
func nodeAttr(node uint64) fuseAttr {
	a := fuseAttr{Ino: node, Mode: unix.S_IFREG | 0o444, Nlink: 1, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	switch node {
	case fuseRootNode:
		a.Mode, a.Nlink = unix.S_IFDIR|0o755, 2
	case fuseMemNode:
		a.Size = uint64(os.Getpagesize())
	}
	return a
}

// memPage is the content of "mem": one page that starts with a poll set
// of one entry, the standard input to be readable.
func memPage() []byte {
	page := make([]byte, os.Getpagesize())
	binary.NativeEndian.PutUint32(page, 0)               // struct pollfd: fd
	binary.NativeEndian.PutUint16(page[4:], unix.POLLIN) // events
	return page
}

// readMem answers a READ of "mem" (struct fuse_read_in: fh, offset,
// size, …) with its content, or holds it once stalled.
func (s *fuseServer) readMem(h fuseInHeader, body []byte) {
	s.mu.Lock()
	stall := s.memStall
	if stall {
		s.held = append(s.held, h.Unique)
		s.memHeld = append(s.memHeld, h.PID)
	}
	s.mu.Unlock()
	if stall {
		return
	}
	if len(body) < 20 {
		s.reply(h.Unique, -int32(unix.EINVAL), nil)
		return
	}
	page := memPage()
	off := min(binary.NativeEndian.Uint64(body[8:]), uint64(len(page)))
	end := min(off+uint64(binary.NativeEndian.Uint32(body[16:])), uint64(len(page)))
	s.reply(h.Unique, 0, page[off:end])
	s.memOnce.Do(func() { s.memRead <- h.PID })
}

// stallMem makes the server hold every READ of "mem" from now on, and
// has the kernel drop the file's pages: from its page cache, and from
// every process's mapping of them (FUSE_NOTIFY_INVAL_INODE, offset 0,
// to the end). The next access to the page asks the server for it.
func (s *fuseServer) stallMem(t *testing.T) {
	s.mu.Lock()
	s.memStall = true
	s.mu.Unlock()
	const notifyInvalInode = 2 // FUSE_NOTIFY_INVAL_INODE, in the header's error
	// struct fuse_notify_inval_inode_out: node id, offset, length (0: all).
	notice, _ := binary.Append(nil, binary.NativeEndian, fuseOutHeader{Len: 16 + 24, Error: notifyInvalInode})
	notice, _ = binary.Append(notice, binary.NativeEndian, [3]int64{fuseMemNode, 0, 0})
	if _, err := s.dev.Write(notice); err != nil {
		t.Fatalf("FUSE_NOTIFY_INVAL_INODE of %q: %v", fuseMemName, err)
	}
}

// memReadsHeld lists the threads whose READs of "mem" the server holds.
func (s *fuseServer) memReadsHeld() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint32(nil), s.memHeld...)
}

// heldRequests is how many requests the server holds unanswered.
func (s *fuseServer) heldRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
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
		select {
		case s.getattrHeld <- struct{}{}:
		default:
		}
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
	task := startInput(t, e, bash.ExecRequest{Command: cmd}, nil)
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
	var sc, stat []byte
	if !testwait.Until(func() bool {
		sc, _ = os.ReadFile(dir + "/syscall")
		stat, _ = os.ReadFile(dir + "/stat")
		return strings.HasPrefix(string(sc), want) && strings.Contains(string(stat), ") S ")
	}) {
		t.Fatalf("cat (pid %d) never slept in read(2) of descriptor %d: syscall %q, stat %q", pid, fd, sc, stat)
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
	t.Errorf("%s did not return within %v: it waits on the FUSE server, requests it holds: %d (GETATTR: %d)", what, fuseCallLimit, fs.heldRequests(), fs.stalledGetattrs())
	fs.close()
	testwait.Recv(t, done, "return of "+what+" once the FUSE connection was closed")
	t.FailNow()
}

// checkStatHeld proves the stall: a stat of /proc/PID/fd/FD, what the
// probe avoids, reaches the server and is held until the server closes.
func checkStatHeld(t *testing.T, fs *fuseServer, pid, fd int) {
	for len(fs.getattrHeld) > 0 { // held before: not the stat's
		<-fs.getattrHeld
	}
	done := make(chan error, 1)
	go func() {
		var st unix.Stat_t
		done <- unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), &st)
	}()
	select {
	case <-fs.getattrHeld:
	case err := <-done:
		t.Errorf("a stat of cat's descriptor %d was not held by the server: %v", fd, err)
		return
	case <-time.After(testwait.Limit):
		t.Errorf("a stat of cat's descriptor %d never reached the server", fd)
	}
	fs.close()
	testwait.Recv(t, done, "return of the stat once the FUSE connection was closed")
}

// TestFuseMemoryProbe: the probe reads the poll set of a task's thread
// from the task's memory (process_vm_readv), and that memory can be a
// page of a FUSE file the task mapped: reading it faults the page in, a
// READ the server need not answer. The helper maps "mem", whose page is a
// poll set of the input, and sleeps in ppoll(2) on it (ppoll copied the
// set in: the server answered that READ). The server then holds every
// READ of "mem" and has the kernel drop the page, from the page cache
// and from the helper's mapping: a probe's read of the set waits for a
// READ the server holds. Such a probe is given up on after maxProbeTime,
// and none is sent while it is out: WriteInput and Get return, the
// task's state unknown.
func TestFuseMemoryProbe(t *testing.T) {
	fs := mountFuse(t)
	e := newExec(t, nil)
	id := startHelperInput(t, e, "fusepoll="+filepath.Join(fs.dir, fuseMemName), false)
	tk, err := e.lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the Kill: the probes left behind return
		fs.close()
		waitProbesBack(t, tk.p)
	})
	tid := int(testwait.Recv(t, fs.memRead, "the helper's READ of the poll set it maps"))
	waitPollBlocked(t, tid)
	pid := tgidOf(t, tid)
	fs.stallMem(t)

	in := bash.Input{Wait: 2 * time.Second}
	var r, again bash.TaskRead
	var task bash.Task
	var errRead, errGet, errAgain error
	callWithin(t, fs, "WriteInput", func(ctx context.Context) { r, errRead = e.WriteInput(ctx, id, in) })
	callWithin(t, fs, "Get", func(ctx context.Context) { task, errGet = e.Get(ctx, id) })
	callWithin(t, fs, "a second WriteInput", func(ctx context.Context) { again, errAgain = e.WriteInput(ctx, id, in) })
	if errRead != nil || errGet != nil || errAgain != nil {
		t.Fatalf("WriteInput: %v; Get: %v; the second WriteInput: %v", errRead, errGet, errAgain)
	}
	if r.Stdout.Text != "> " || r.Task.WaitingInput || task.WaitingInput || again.Task.WaitingInput {
		t.Errorf("WriteInput: %q, waiting %v; Get: waiting %v; the second WriteInput: waiting %v; want the prompt, and the state unknown (not waiting)",
			r.Stdout.Text, r.Task.WaitingInput, task.WaitingInput, again.Task.WaitingInput)
	}
	// The attack took: the server holds one READ, a probe's (of a thread
	// of this process: the helper sleeps in ppoll throughout); the other
	// probes given up on wait in the same fault, on the page's lock.
	if held := fs.memReadsHeld(); len(held) != 1 || !isOwnThread(held[0]) {
		t.Fatalf("READs of %q held, by thread: %v; want one, by a thread of this process (%d)", fuseMemName, held, os.Getpid())
	}
	waitPollBlocked(t, tid)
	// Every probe that started before the first was given up on is stuck:
	// at most one of WriteInput's and one of the executor's watcher of
	// the task (watchWaiting, on a goroutine of its own). None started
	// since: Get and the second WriteInput sent none.
	stuck, left := memReaders(t, pid), int(tk.p.probesLeft.Load())
	t.Logf("probes given up on: %d; threads of this process in process_vm_readv of pid %d: %d", left, pid, stuck)
	if left < 1 || left > 2 || stuck != left {
		t.Errorf("probes given up on: %d, threads stuck reading the helper's memory: %d; want as many, 1 or 2", left, stuck)
	}
}

// fusePoll is the wait helper's "fusepoll=PATH" mode: it maps the first
// page of file PATH, without touching it, prints the prompt, and sleeps
// in ppoll(2) with the poll set the page holds (the server makes it the
// input's) until the input is readable.
func fusePoll(path string) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	page, err := unix.Mmap(int(f.Fd()), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mmap:", err)
		return 1
	}
	set := unsafe.Slice((*unix.PollFd)(unsafe.Pointer(unsafe.SliceData(page))), 1)
	os.Stdout.WriteString("> ")
	for {
		_, err := unix.Ppoll(set, nil, nil)
		if err != unix.EINTR {
			return 0
		}
	}
}

// waitPollBlocked waits until thread tid sleeps in ppoll(2).
func waitPollBlocked(t *testing.T, tid int) {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(tid)
	want := strconv.Itoa(unix.SYS_PPOLL) + " "
	var sc, stat, wchan []byte
	if !testwait.Until(func() bool {
		sc, _ = os.ReadFile(dir + "/syscall")
		stat, _ = os.ReadFile(dir + "/stat")
		// Asleep in ppoll, and in the wait itself, not in a fault on
		// the poll set (where the kernel names the function).
		wchan, _ = os.ReadFile(dir + "/wchan")
		inPoll := strings.Contains(string(wchan), "poll") || string(wchan) == "0" || len(wchan) == 0
		return strings.HasPrefix(string(sc), want) && strings.Contains(string(stat), ") S ") && inPoll
	}) {
		t.Fatalf("thread %d never slept in ppoll(2): syscall %q, stat %q, wchan %q", tid, sc, stat, wchan)
	}
}

// isOwnThread reports whether tid is a thread of this process.
func isOwnThread(tid uint32) bool {
	_, err := os.Stat("/proc/self/task/" + strconv.FormatUint(uint64(tid), 10))
	return err == nil
}

// tgidOf is the process of thread tid.
func tgidOf(t *testing.T, tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no Tgid in the status of thread %d", tid)
	return 0
}

// memReaders counts the threads of this process that sleep in
// process_vm_readv(2) of process pid's memory.
func memReaders(t *testing.T, pid int) int {
	tids, err := readDirNames("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d %#x ", unix.SYS_PROCESS_VM_READV, pid)
	n := 0
	for _, tid := range tids {
		if sc, _ := os.ReadFile("/proc/self/task/" + tid + "/syscall"); strings.HasPrefix(string(sc), want) {
			n++
		}
	}
	return n
}

// waitProbesBack waits until no probe of p is left behind.
func waitProbesBack(t *testing.T, p *proc) {
	if !testwait.Until(func() bool { return p.probesLeft.Load() == 0 }) {
		t.Errorf("a probe left behind never returned: %d out", p.probesLeft.Load())
	}
}
