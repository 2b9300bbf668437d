package sandbox

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The fence keeps the commands of a jail with a network namespace of its
// own (NetworkOff, NetworkAllowlist) from the host's unix sockets, which
// they could otherwise reach by path on the read-only host root (a
// connect to a socket needs no write access to its file system): the
// Nix daemon's, docker's, a language server's in the workspace. Sockets
// the session binds itself stay reachable.
//
// Every command runs under the fence's filter (fenceProgram), whose
// notifications the host answers: for each connect, sendmsg, sendmmsg,
// and sendto with an address, the host reads the arguments from the
// command's memory once, takes its socket with pidfd_getfd, and makes the
// call itself, on its own copies; it never lets the command's call go on
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE), since another of the command's
// threads could change the address in memory, or dup2 another socket
// onto the descriptor, between the check and the call. A unix socket
// address naming a path is resolved as the command would resolve it
// (jailView), the inode found pinned, and checked: it must be a socket
// bound in the jail's network namespace (a sock_diag dump of it lists
// the socket at that inode), on a file system whose inode numbers cannot
// alias another's (ownSocket); the call then names the pinned inode, as
// /proc/self/fd/N, so what was checked is what is reached. Otherwise the
// command's call fails with EACCES, and the host service never hears of
// it. Other addresses (inet, abstract, unnamed) are used as given: the
// socket's own network namespace, the jail's, confines them.
//
// What the host does for a command is done with the host's credentials:
// a server of the session that asks who connected (SO_PEERCRED) sees the
// host's process id (0 in the jail, where it is not visible) and the
// same user; a message carrying credentials (SCM_CREDENTIALS) is refused
// with EPERM. Descriptors passed along (SCM_RIGHTS) are the command's.

// fence supervises the system calls of one jail's commands that can name
// a unix socket.
type fence struct {
	file *os.File // the filter's listener, in the runtime's poller
	rc   syscall.RawConn
	diag int // a NETLINK_SOCK_DIAG socket in the jail's network namespace

	diagMu  sync.Mutex // one dump at a time on diag, into diagBuf
	diagBuf []byte

	private  []string // the jail's own tmpfs mounts (/tmp, its covers, /dev)
	privOnce sync.Once
	privDevs []uint32 // their devices

	slots chan struct{}  // bounds the calls made at once
	wg    sync.WaitGroup // the loop and every call in flight

	mu      sync.Mutex
	socks   map[int]struct{} // the sockets of the calls in flight
	changed chan struct{}    // closed, and made anew, when socks changes
	closed  bool
}

// fenceSlots bounds the calls one jail has the host make at once: each
// may block a thread of the host's (a blocking connect, a send to a full
// socket), and a session's commands must not exhaust the server's
// threads. Past it, commands wait in the kernel for a slot.
const fenceSlots = 64

// newFence takes the agent's fence descriptors (the filter's listener and
// the sock_diag socket), after checking that they are what they should be
// (the agent runs beside the commands), and starts answering.
func newFence(listener, diag int, private []string) (*fence, error) {
	if err := checkFenceFDs(listener, diag); err != nil {
		unix.Close(listener)
		unix.Close(diag)
		return nil, err
	}
	if err := unix.SetNonblock(listener, true); err != nil {
		unix.Close(listener)
		unix.Close(diag)
		return nil, fmt.Errorf("the fence's listener: %w", err)
	}
	f := &fence{file: os.NewFile(uintptr(listener), "dsh-fence"), diag: diag, diagBuf: make([]byte, 32<<10), private: private,
		slots: make(chan struct{}, fenceSlots), socks: map[int]struct{}{}, changed: make(chan struct{})}
	rc, err := f.file.SyscallConn()
	if err == nil {
		err = f.file.SetReadDeadline(time.Time{}) // in the poller, or no way to stop the loop
	}
	if err != nil {
		f.file.Close()
		unix.Close(diag)
		return nil, fmt.Errorf("the fence's listener: %w", err)
	}
	f.rc = rc
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// errNotFence: a descriptor of the agent's is not what the fence needs.
var errNotFence = errors.New("not the fence's listener and a sock_diag socket of the jail's own network namespace")

// checkFenceFDs checks the agent's fence descriptors: a seccomp listener,
// and a NETLINK_SOCK_DIAG socket of a network namespace other than ours
// (a dump of ours would list the host's sockets as the jail's).
func checkFenceFDs(listener, diag int) error {
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", listener))
	if err != nil || link != "anon_inode:seccomp notify" {
		return fmt.Errorf("%w: %w", errProtocol, errNotFence)
	}
	dom, err1 := unix.GetsockoptInt(diag, unix.SOL_SOCKET, unix.SO_DOMAIN)
	proto, err2 := unix.GetsockoptInt(diag, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err1 != nil || err2 != nil || dom != unix.AF_NETLINK || proto != unix.NETLINK_SOCK_DIAG {
		return fmt.Errorf("%w: %w", errProtocol, errNotFence)
	}
	ns, err := unix.IoctlRetInt(diag, unix.SIOCGSKNS)
	if err != nil {
		return fmt.Errorf("the network namespace of the jail's sock_diag socket: %w", err)
	}
	defer unix.Close(ns)
	var theirs, ours unix.Stat_t
	if err := unix.Fstat(ns, &theirs); err != nil {
		return err
	}
	if err := unix.Stat("/proc/self/ns/net", &ours); err != nil {
		return err
	}
	if theirs.Dev == ours.Dev && theirs.Ino == ours.Ino {
		return fmt.Errorf("%w: %w", errProtocol, errNotFence)
	}
	return nil
}

// The kernel's struct seccomp_notif and struct seccomp_notif_resp.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// serve receives the notifications, each answered on a goroutine of its
// own once a slot is free, until the listener hangs up (no process uses
// the filter any more) or close stops it.
func (f *fence) serve() {
	defer f.wg.Done()
	for {
		f.slots <- struct{}{}
		n, err := f.recv()
		if err != nil {
			<-f.slots
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() { <-f.slots }()
			f.answer(&n)
		}()
	}
}

// errHangup: no process uses the fence's filter any more.
var errHangup = errors.New("the fence's filter is gone")

// recv waits for the next notification. Only this loop receives, and it
// receives only once poll says one waits, so the ioctl never blocks (a
// notification withdrawn meanwhile, by a fatal signal, makes it fail
// with ENOENT).
func (f *fence) recv() (seccompNotif, error) {
	var n seccompNotif
	var rerr error
	err := f.rc.Read(func(fd uintptr) bool {
		for {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if _, err := unix.Poll(pfd, 0); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				rerr = err
				return true
			}
			switch {
			case pfd[0].Revents&unix.POLLIN != 0:
			case pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0:
				rerr = errHangup
				return true
			default:
				return false // wait in the poller
			}
			n = seccompNotif{}
			_, _, e := unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
			switch e {
			case 0:
				return true
			case unix.ENOENT, unix.EINTR:
				continue
			}
			rerr = e
			return true
		}
	})
	if err != nil {
		return n, err
	}
	return n, rerr
}

// answer makes the call of notification n for its command and tells the
// kernel what the command's call returns.
func (f *fence) answer(n *seccompNotif) {
	val, errno := f.call(n)
	resp := seccompResp{ID: n.ID, Val: val}
	if errno != 0 {
		resp.Val, resp.Error = 0, -int32(errno)
	}
	// ENOENT: the command is gone, or a fatal signal ended its call.
	_ = f.ioctl(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

// call dispatches a notification to the call's handler.
func (f *fence) call(n *seccompNotif) (int64, syscall.Errno) {
	t, err := f.target(n)
	if err != nil {
		return 0, errnoOf(err)
	}
	defer t.close()
	switch n.Nr {
	case unix.SYS_CONNECT:
		return f.connect(t, n)
	case unix.SYS_SENDTO:
		return f.sendto(t, n)
	case unix.SYS_SENDMSG:
		return f.sendmsg(t, n)
	case unix.SYS_SENDMMSG:
		return f.sendmmsg(t, n)
	}
	return 0, unix.ENOSYS
}

// ioctl is an ioctl on the listener, which stays open meanwhile.
func (f *fence) ioctl(req uint, arg unsafe.Pointer) error {
	var errno syscall.Errno
	err := f.rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(arg))
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// track records a socket a call is using, for close; untrack forgets it.
// track reports false once the fence is closing.
func (f *fence) track(sock int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.socks[sock] = struct{}{}
	f.wake()
	return true
}

func (f *fence) untrack(sock int) {
	f.mu.Lock()
	delete(f.socks, sock)
	f.wake()
	f.mu.Unlock()
}

// wake tells who waits on changed. Under mu.
func (f *fence) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// inFlight is how many calls are in flight, and a channel closed when
// that changes.
func (f *fence) inFlight() (int, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.socks), f.changed
}

// close stops answering and waits for the calls in flight, which the
// jail's end (its sockets closed with its processes) or a shutdown of
// their sockets (a TCP connect still trying) ends, then closes the
// descriptors. The jail's processes are gone by now: the sockets shut
// down were theirs.
func (f *fence) close() {
	f.mu.Lock()
	f.closed = true
	for sock := range f.socks {
		_ = unix.Shutdown(sock, unix.SHUT_RDWR)
	}
	f.mu.Unlock()
	_ = f.file.SetReadDeadline(time.Now()) // the loop's wait ends
	f.wg.Wait()
	f.file.Close()
	unix.Close(f.diag)
}

// errnoOf is the errno a call fails with for err: its own, else EIO.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return unix.EIO
}
