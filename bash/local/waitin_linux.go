//go:build linux

package local

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

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

// fileIDOf is the identity of f's open file.
func fileIDOf(f *os.File) (fileID, bool) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}

// probeTask reads the state of the processes pids with respect to in,
// the task's input.
func probeTask(pids []int, in fileID) probeResult {
	var r probeResult
	for _, pid := range pids {
		if st := probeProcess(pid, in, &r.readers); st != inputIdle {
			return probeResult{state: st}
		}
	}
	r.state = inputIdle
	if len(r.readers) > 0 {
		r.state = inputWaiting
	}
	return r
}

// probeProcess adds the threads of pid that read in to readers; it
// returns inputIdle unless a thread runs (inputRunning) or the kernel
// does not say (inputUnknown).
func probeProcess(pid int, in fileID, readers *[]reader) inputState {
	dir := "/proc/" + strconv.Itoa(pid)
	tids, err := readDirNames(dir + "/task")
	if err != nil {
		return goneOrUnknown(err)
	}
	for _, name := range tids {
		st, reads, err := probeThread(pid, dir+"/task/"+name, in)
		if err != nil {
			if st := goneOrUnknown(err); st != inputIdle {
				return st
			}
			continue
		}
		if st != inputIdle {
			return st
		}
		if reads {
			tid, _ := strconv.Atoi(name)
			*readers = append(*readers, reader{tid: tid, runs: threadRuns(dir + "/task/" + name)})
		}
	}
	return inputIdle
}

// goneOrUnknown is what an error reading /proc means: a process or
// thread that ended meanwhile is left out (inputIdle), anything else
// makes the state unknown.
func goneOrUnknown(err error) inputState {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return inputIdle
	}
	return inputUnknown
}

// probeThread reads one thread: whether it runs, and whether it sleeps
// reading in.
func probeThread(pid int, dir string, in fileID) (inputState, bool, error) {
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return inputIdle, false, err
	}
	switch threadState(stat) {
	case 'R', 'D', 'W':
		return inputRunning, false, nil
	case 'S':
	default: // stopped, traced, a zombie: neither runs nor reads
		return inputIdle, false, nil
	}
	sc, err := os.ReadFile(dir + "/syscall")
	if err != nil {
		return inputIdle, false, err
	}
	if bytes.HasPrefix(sc, []byte("running")) {
		return inputRunning, false, nil
	}
	reads, err := sleepsReading(pid, sc, in)
	return inputIdle, reads, err
}

// threadState is the state letter of a /proc stat text, found after the
// command name's last ')' (the name may hold any byte).
func threadState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// sleepsReading reports whether the system call of a /proc syscall text
// ("NR ARG0 … ARG5 SP PC") waits for in to be readable.
func sleepsReading(pid int, sc []byte, in fileID) (bool, error) {
	f := strings.Fields(string(sc))
	if len(f) < 7 {
		return false, nil // "-1 SP PC": blocked outside a system call
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return false, nil
	}
	var arg [6]uint64
	for i := range arg {
		if arg[i], err = strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64); err != nil {
			return false, nil
		}
	}
	switch waitSyscall(nr) {
	case sysRead:
		return fdIs(pid, int(int32(arg[0])), in), nil
	case sysPoll:
		return pollWatches(pid, arg[0], arg[1], in)
	case sysSelect:
		return selectWatches(pid, arg[0], arg[1], in)
	case sysEpoll:
		return epollWatches(pid, int(int32(arg[0])), in)
	}
	return false, nil
}

// fdIs reports whether descriptor fd of process pid is in.
func fdIs(pid, fd int, in fileID) bool {
	if fd < 0 {
		return false
	}
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), &st) != nil {
		return false
	}
	return st.Dev == in.dev && st.Ino == in.ino
}

// maxWatched bounds the descriptors read of one poll or select set.
const maxWatched = 1 << 12

// pollWatches reads the poll set of n entries at addr in pid's memory
// and reports whether one waits for in to be readable.
func pollWatches(pid int, addr, n uint64, in fileID) (bool, error) {
	n = min(n, maxWatched)
	buf := make([]byte, 8*n) // struct pollfd { int fd; short events, revents; }
	if err := readMemory(pid, addr, buf); err != nil {
		return false, err
	}
	for i := 0; i+8 <= len(buf); i += 8 {
		fd := int32(binary.NativeEndian.Uint32(buf[i:]))
		events := binary.NativeEndian.Uint16(buf[i+4:])
		if events&(unix.POLLIN|pollRdNorm) != 0 && fdIs(pid, int(fd), in) {
			return true, nil
		}
	}
	return false, nil
}

// selectWatches reads the read set of nfds descriptors at addr in pid's
// memory and reports whether it holds in.
func selectWatches(pid int, nfds, addr uint64, in fileID) (bool, error) {
	if addr == 0 {
		return false, nil
	}
	nfds = min(nfds, maxWatched)
	buf := make([]byte, 8*((nfds+63)/64))
	if err := readMemory(pid, addr, buf); err != nil {
		return false, err
	}
	for fd := range int(nfds) {
		if buf[fd/8]&(1<<(fd%8)) != 0 && fdIs(pid, fd, in) {
			return true, nil
		}
	}
	return false, nil
}

// readMemory reads len(buf) bytes at addr of pid's memory.
func readMemory(pid int, addr uint64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	switch {
	case errors.Is(err, unix.EFAULT):
		return nil // a bad pointer: the call fails at once, it waits for nothing
	case err != nil:
		return err
	case n != len(buf):
		return errors.New("short read of a process's memory")
	}
	return nil
}

// epollWatches reports whether the epoll instance fd of pid watches in
// for reading, from its fdinfo: "tfd: FD events: HEX data: HEX pos:N
// ino:HEX sdev:HEX" per watched file.
func epollWatches(pid, fd int, in fileID) (bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return false, nil // gone, or not a descriptor: it waits on nothing of ours
	}
	for line := range strings.Lines(string(b)) {
		if events, id, ok := epollTarget(line); ok && events&unix.EPOLLIN != 0 && id == in {
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
	if b, err := os.ReadFile(dir + "/schedstat"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 3 {
			n, _ := strconv.ParseUint(f[2], 10, 64)
			return n
		}
	}
	b, err := os.ReadFile(dir + "/status")
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
// lists of each thread's children.
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		dir := "/proc/" + strconv.Itoa(out[i]) + "/task"
		tids, err := readDirNames(dir)
		if err != nil {
			continue
		}
		for _, tid := range tids {
			b, err := os.ReadFile(dir + "/" + tid + "/children")
			if err != nil {
				continue
			}
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil && !slices.Contains(out, n) {
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

// pollRdNorm is POLLRDNORM, which x/sys/unix leaves out: normal data is
// readable.
const pollRdNorm = 0x40
