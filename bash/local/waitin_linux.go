//go:build linux

package local

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel says when a task waits for input: each thread of its
// processes has a state (/proc/PID/task/TID/stat), and a sleeping one the
// system call it sleeps in, with its arguments (/proc/…/syscall). A
// thread blocked in read(2) of the task's input pipe or terminal, or in
// poll(2), select(2) or epoll_wait(2) on a set that holds it, waits for
// input; the task does when one thread does and none runs. Reading a
// thread's system call takes the access ptrace would need (the
// executor's own descendants, or a jail of its own user namespace): where
// the kernel refuses it, the state is unknown and the caller falls back
// to waiting for quiet.

// fileIDOf is the identity of f's open file: its device and inode, and
// the mount it was opened on, as /proc/self/fdinfo says.
func fileIDOf(f *os.File) (fileID, bool) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return fileID{}, false
	}
	mnt, ino, ok := fdInfo("/proc/self/fdinfo/" + strconv.Itoa(int(f.Fd())))
	if !ok || ino != st.Ino {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino, mnt: mnt}, true
}

// fdInfo reads the mount id and inode number of an open file from its
// fdinfo: the kernel's own record, which, unlike a stat through
// /proc/PID/fd, never asks the file's filesystem (a FUSE server that
// does not answer would hold the probe).
func fdInfo(path string) (mnt, ino uint64, ok bool) {
	b, err := readProc(path)
	if err != nil {
		return 0, 0, false
	}
	var seen int
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "mnt_id":
			mnt, err = strconv.ParseUint(v, 10, 64)
		case "ino":
			ino, err = strconv.ParseUint(v, 10, 64)
		default:
			continue
		}
		if err != nil {
			return 0, 0, false
		}
		seen++
	}
	return mnt, ino, seen == 2
}

// Bounds of one probe: a task with more threads, or poll and select
// sets that name more descriptors, than one probe reads is one whose
// state is unknown (each costs the server a read of /proc, outside any
// limit of the task's).
const (
	maxProbedThreads = 256
	maxLookups       = 1024
)

// prober is one reading of a task's processes.
type prober struct {
	in      fileID
	horizon time.Duration  // a sleep that ends sooner is not a wait for input
	threads int            // threads left to read
	lookups int            // descriptor lookups left
	fds     map[fdRef]bool // descriptors looked up: whether each is in
	readers []reader
	timed   bool // a thread sleeps until a time within the horizon
	live    int  // processes found
}

type fdRef struct{ pid, fd int }

// sleeper is a sleeping thread, and the system call it sleeps in.
type sleeper struct {
	pid, tid int
	dir      string // /proc/PID/task/TID
	nr       int64
	arg      [6]uint64
}

// probeTask reads the state of the processes pids with respect to in,
// the task's input: a thread that sleeps with a timeout shorter than
// horizon wakes by itself, and the task does not wait for input then.
// It reads the system call of every thread first (one read each: a
// thread that runs reads "running"), and the memory of sleeping threads
// only when none runs.
func probeTask(pids []int, in fileID, horizon time.Duration) probeResult {
	pr := &prober{in: in, horizon: horizon, threads: maxProbedThreads, lookups: maxLookups, fds: map[fdRef]bool{}}
	var asleep []sleeper
	for _, pid := range pids {
		if st := pr.calls(pid, &asleep); st != inputIdle {
			return probeResult{state: st}
		}
	}
	if pr.live == 0 {
		// Every process is gone: the task ends, and its end is on its way
		// (a jail's agent reaps the shell, then tells the server). It
		// does not wait for input; its quiet is no answer either.
		return probeResult{state: inputRunning}
	}
	for _, th := range asleep {
		if st := pr.sleep(th); st != inputIdle {
			return probeResult{state: st}
		}
	}
	if len(pr.readers) > 0 && !pr.timed {
		return probeResult{state: inputWaiting, readers: pr.readers}
	}
	return probeResult{state: inputIdle}
}

// calls reads the system call of each thread of pid, adding those that
// sleep in one to asleep; it returns inputIdle unless a thread runs
// (inputRunning) or the kernel does not say (inputUnknown).
func (pr *prober) calls(pid int, asleep *[]sleeper) inputState {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tids, err := readDirNames(dir)
	if err != nil {
		return goneOrUnknown(err)
	}
	if len(tids) > 0 {
		pr.live++
	}
	if pr.threads -= len(tids); pr.threads < 0 {
		return inputUnknown
	}
	for _, name := range tids {
		sc, err := readProc(dir + "/" + name + "/syscall")
		if err != nil {
			if st := goneOrUnknown(err); st != inputIdle {
				return st
			}
			continue
		}
		if bytes.HasPrefix(sc, []byte("running")) {
			return inputRunning
		}
		nr, arg, ok := parseSyscall(sc)
		if !ok {
			// "-1 SP PC": blocked outside a system call, in a page
			// fault (on the disk): it goes on without input.
			return inputRunning
		}
		tid, _ := strconv.Atoi(name)
		*asleep = append(*asleep, sleeper{pid: pid, tid: tid, dir: dir + "/" + name, nr: nr, arg: arg})
	}
	return inputIdle
}

// sleep reads what a sleeping thread waits for: the task's input (a
// reader), a time within the horizon (timed), or something else.
func (pr *prober) sleep(th sleeper) inputState {
	left, err := sleepLeft(th.pid, th.nr, th.arg)
	if err != nil {
		return goneOrUnknown(err)
	}
	if left < pr.horizon {
		pr.timed = true
		return inputIdle
	}
	reads, err := pr.waitsOnInput(th.pid, th.nr, th.arg)
	if err != nil {
		return goneOrUnknown(err)
	}
	if reads {
		pr.readers = append(pr.readers, reader{tid: th.tid, runs: threadRuns(th.dir)})
		return inputIdle
	}
	return onDisk(th)
}

// onDisk is inputRunning for a thread in an uninterruptible sleep (on
// the disk: it goes on by itself, soon), else inputIdle. Only a thread
// in a call that can wait on the disk is read again for it.
func onDisk(th sleeper) inputState {
	if waitsQuietly(th.nr) {
		return inputIdle
	}
	stat, err := readProc(th.dir + "/stat")
	if err != nil {
		return goneOrUnknown(err)
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'D' {
		return inputRunning
	}
	return inputIdle
}

// parseSyscall reads a /proc syscall text: "NR ARG0 … ARG5 SP PC".
func parseSyscall(sc []byte) (nr int64, arg [6]uint64, ok bool) {
	f := strings.Fields(string(sc))
	if len(f) < 7 {
		return 0, arg, false
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, arg, false
	}
	for i := range arg {
		if arg[i], err = strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64); err != nil {
			return 0, arg, false
		}
	}
	return nr, arg, true
}

// waitsOnInput reports whether system call nr with arg waits for the
// input to be readable.
func (pr *prober) waitsOnInput(pid int, nr int64, arg [6]uint64) (bool, error) {
	switch waitSyscall(nr) {
	case sysRead:
		return pr.fdIs(pid, int(int32(arg[0])))
	case sysPoll:
		return pr.pollWatches(pid, arg[0], arg[1])
	case sysSelect:
		return pr.selectWatches(pid, arg[0], arg[1])
	case sysEpoll:
		return epollWatches(pid, int(int32(arg[0])), pr.in)
	}
	return false, nil
}

// fdIs reports whether descriptor fd of process pid is the input,
// looking each up once a probe, within its budget.
func (pr *prober) fdIs(pid, fd int) (bool, error) {
	if fd < 0 {
		return false, nil
	}
	ref := fdRef{pid, fd}
	if is, ok := pr.fds[ref]; ok {
		return is, nil
	}
	if pr.lookups--; pr.lookups < 0 {
		return false, errTooMany
	}
	is := fdIs(pid, fd, pr.in)
	pr.fds[ref] = is
	return is, nil
}

// errTooMany: the probe's budget ran out; the state is unknown.
var errTooMany = errors.New("too many descriptors to look up")

// goneOrUnknown is what an error reading /proc means: a process or
// thread that ended meanwhile is left out (inputIdle), anything else
// makes the state unknown.
func goneOrUnknown(err error) inputState {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return inputIdle
	}
	return inputUnknown
}

// fdIs reports whether descriptor fd of process pid is in: the same
// inode opened on the same mount.
func fdIs(pid, fd int, in fileID) bool {
	if fd < 0 {
		return false
	}
	mnt, ino, ok := fdInfo("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	return ok && mnt == in.mnt && ino == in.ino
}

// epollWatches reports whether the epoll instance fd of pid watches in
// for reading, from its fdinfo: "tfd: FD events: HEX data: HEX pos:N
// ino:HEX sdev:HEX" per watched file.
func epollWatches(pid, fd int, in fileID) (bool, error) {
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return false, nil // gone, or not a descriptor: it waits on nothing of ours
	}
	for line := range strings.Lines(string(b)) {
		if events, id, ok := epollTarget(line); ok && events&unix.EPOLLIN != 0 && id.dev == in.dev && id.ino == in.ino {
			return true, nil
		}
	}
	return false, nil
}

// epollTarget reads one line of an epoll instance's fdinfo: "tfd: FD
// events: HEX data: HEX pos:N ino:HEX sdev:HEX", where sdev is the
// kernel's own dev_t (the minor in its low 20 bits).
func epollTarget(line string) (events uint64, id fileID, ok bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "tfd:" || f[2] != "events:" {
		return 0, fileID{}, false
	}
	events, err1 := strconv.ParseUint(f[3], 16, 32)
	ino, err2 := strconv.ParseUint(strings.TrimPrefix(f[7], "ino:"), 16, 64)
	sdev, err3 := strconv.ParseUint(strings.TrimPrefix(f[8], "sdev:"), 16, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, fileID{}, false
	}
	return events, fileID{dev: unix.Mkdev(uint32(sdev>>20), uint32(sdev&(1<<20-1))), ino: ino}, true
}

// threadRuns is how many times the thread was put on a CPU
// (/proc/…/schedstat), or, where the kernel keeps no schedstat, how many
// times it was switched out (/proc/…/status): either grows whenever the
// thread wakes.
func threadRuns(dir string) uint64 {
	if b, err := readProc(dir + "/schedstat"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 3 {
			n, _ := strconv.ParseUint(f[2], 10, 64)
			return n
		}
	}
	b, err := readProc(dir + "/status")
	if err != nil {
		return 0
	}
	var n uint64
	for line := range strings.Lines(string(b)) {
		for _, key := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
			if v, ok := strings.CutPrefix(line, key); ok {
				c, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

// descendants is pid and every process below it, from the kernel's
// lists of each thread's children, at most maxProbedThreads of them.
func descendants(pid int) []int {
	out, seen := []int{pid}, map[int]bool{pid: true}
	for i := 0; i < len(out) && len(out) <= maxProbedThreads; i++ {
		dir := "/proc/" + strconv.Itoa(out[i]) + "/task"
		tids, err := readDirNames(dir)
		if err != nil {
			continue
		}
		for _, tid := range tids {
			b, err := readProc(dir + "/" + tid + "/children")
			if err != nil {
				continue
			}
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil && !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// readDirNames lists a directory's names.
func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// pendingBytes is how many bytes wait to be read from f (FIONREAD, TIOCINQ): a
// pipe's, or what a terminal's controlling side has to read. A closed f
// has none.
func pendingBytes(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	if rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) != nil {
		return 0
	}
	return n
}

// maxProcFile bounds what readProc reads of one file: the files it reads
// are a line or a few (status, with its many lines, is the longest).
const maxProcFile = 8 << 10

// readProc reads a small file of /proc in one read, without what an
// os.File costs (a probe reads dozens).
func readProc(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, maxProcFile)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		return buf[:n], nil
	}
}
