package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
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
// on the jail's own /tmp, or one bound in the jail's network namespace
// (a sock_diag dump of it lists the socket at that inode) on a file
// system whose inode numbers cannot alias another's (ownSocket); the
// call then names the pinned inode, as /proc/self/fd/N, so what was
// checked is what is reached. Otherwise the command's call fails with
// EACCES, and the host service never hears of it. Other addresses (inet,
// abstract, unnamed) are used as given: the socket's own network
// namespace, the jail's, confines them.
//
// The host's call stands for the command's to the end: once the host
// has the notification, the command waits for its answer, or a fatal
// signal (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), so that a call a
// signal would have interrupted and restarted is never made twice. A
// send to a peer gone raises SIGPIPE in the command, as the kernel
// would have.
//
// What the host does for a command is done with the host's credentials:
// a server of the session that asks who connected (SO_PEERCRED) sees the
// host's process id (0 in the jail, where it is not visible) and the
// same user; a message carrying credentials (SCM_CREDENTIALS) is refused
// with EPERM. Descriptors passed along (SCM_RIGHTS) are the command's.

// fence supervises the system calls of one jail's commands that can name
// a unix socket. One thread of its own waits for the notifications and
// makes the calls that cannot block (on a non-blocking socket, or with
// MSG_DONTWAIT: what Go, Node and asyncio programs make) at once; the
// others, each on a goroutine of its own, so that one waiting (a connect
// to a full backlog, a send to a full socket) holds up no other.
type fence struct {
	listener int // the filter's listener
	stop     int // an eventfd that ends the loop
	diag     int // a NETLINK_SOCK_DIAG socket in the jail's network namespace

	diagMu  sync.Mutex // one dump at a time on diag, into diagBuf
	diagBuf []byte

	private  []string // the jail's own tmpfs mounts (/tmp, its covers, /dev)
	privOnce sync.Once
	privDevs []uint32 // their devices

	slots chan struct{}  // bounds the calls that may block
	wg    sync.WaitGroup // the loop and every call in flight

	mu      sync.Mutex
	socks   map[int]struct{} // the sockets of the calls in flight
	changed chan struct{}    // closed when socks changes, if someone waits (inFlight)
	closed  bool
}

// fenceSlots bounds the calls of one jail that may block a thread of the
// host's at once (a blocking connect, a send to a full socket): a
// session's commands must not exhaust the server's threads. Past it, the
// jail's calls wait in the kernel for a slot.
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
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(listener)
		unix.Close(diag)
		return nil, fmt.Errorf("the fence's eventfd: %w", err)
	}
	f := &fence{listener: listener, stop: stop, diag: diag, diagBuf: make([]byte, 32<<10), private: private,
		slots: make(chan struct{}, fenceSlots), socks: map[int]struct{}{}}
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
	if !isNotifyListener(listener) {
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

// isNotifyListener says whether fd is a seccomp filter's listener.
func isNotifyListener(fd int) bool {
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	return err == nil && link == "anon_inode:seccomp notify"
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

// serve receives the notifications, on a thread of its own (a wait in
// poll wakes it at once, where the runtime's poller would hand the
// notification through two goroutines), until the listener hangs up (no
// process uses the filter any more) or close stops it.
func (f *fence) serve() {
	defer f.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		n, err := f.recv()
		if err != nil {
			return
		}
		f.answer(&n)
	}
}

// errHangup: no process uses the filter (the fence's, the clone3
// guard's) any more, or its supervisor is closing.
var errHangup = errors.New("the filter is gone")

// recv waits for the next notification (see recvNotif).
func (f *fence) recv() (seccompNotif, error) { return recvNotif(f.listener, f.stop) }

// recvNotif waits for the next notification on listener, until stop (an
// eventfd) is written to or the listener hangs up (no process uses the
// filter any more): errHangup. Only one loop receives on a listener, and
// it receives only once poll says one waits, so the ioctl never blocks
// (a notification withdrawn meanwhile, by a fatal signal, makes it fail
// with ENOENT).
func recvNotif(listener, stop int) (seccompNotif, error) {
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return seccompNotif{}, err
		}
		switch {
		case fds[1].Revents != 0:
			return seccompNotif{}, errHangup
		case fds[0].Revents&unix.POLLIN != 0:
		case fds[0].Revents != 0: // POLLHUP
			return seccompNotif{}, errHangup
		default:
			continue
		}
		var n seccompNotif
		switch err := notifIoctl(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err {
		case nil:
			return n, nil
		case unix.ENOENT, unix.EINTR:
			continue
		default:
			return seccompNotif{}, err
		}
	}
}

// answer makes the call of notification n for its command, at once or,
// where it may block, on a goroutine of its own, which makes it once a
// slot is free (a slot is a thread of the host's blocked in the call),
// and tells the kernel what the command's call returns.
func (f *fence) answer(n *seccompNotif) {
	t, sock, err := f.open(n)
	if err != nil {
		f.reply(n.ID, 0, errnoOf(err))
		return
	}
	if !mayBlock(sock, n) {
		f.finish(t, sock, n)
		return
	}
	// The loop never waits for a slot: a command whose calls hold every
	// slot (connects to a full backlog) holds up only its own calls that
	// may block, not the answers to the others.
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.slots <- struct{}{}
		defer func() { <-f.slots }()
		f.finish(t, sock, n)
	}()
}

// mayBlock reports whether a call can wait: on a blocking socket, and
// (but a connect) without MSG_DONTWAIT.
func mayBlock(sock int, n *seccompNotif) bool {
	fl, err := unix.FcntlInt(uintptr(sock), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK != 0 {
		return false // a bad descriptor fails at once
	}
	if n.Nr == unix.SYS_CONNECT {
		return true
	}
	flags := n.Args[3] // sendto's and sendmmsg's
	if n.Nr == unix.SYS_SENDMSG {
		flags = n.Args[2]
	}
	return flags&unix.MSG_DONTWAIT == 0
}

// open takes the command's thread and its socket (the call's first
// argument, for each of the fence's calls).
func (f *fence) open(n *seccompNotif) (*target, int, error) {
	t, err := f.target(n)
	if err != nil {
		return nil, -1, err
	}
	sock, err := t.fd(n.Args[0])
	if err != nil {
		t.close()
		return nil, -1, err
	}
	return t, sock, nil
}

// finish makes the call with the command's socket, and answers.
func (f *fence) finish(t *target, sock int, n *seccompNotif) {
	defer t.close()
	defer unix.Close(sock)
	if !f.track(sock) {
		f.reply(n.ID, 0, unix.ECONNABORTED)
		return
	}
	defer f.untrack(sock)
	val, err := f.call(t, sock, n)
	if err != nil {
		f.reply(n.ID, 0, errnoOf(err))
		return
	}
	f.reply(n.ID, val, 0)
}

// call dispatches a notification to the call's handler.
func (f *fence) call(t *target, sock int, n *seccompNotif) (int64, error) {
	switch n.Nr {
	case unix.SYS_CONNECT:
		return f.connect(t, sock, n)
	case unix.SYS_SENDTO:
		return f.sendto(t, sock, n)
	case unix.SYS_SENDMSG:
		return f.sendmsg(t, sock, n)
	case unix.SYS_SENDMMSG:
		return f.sendmmsg(t, sock, n)
	}
	return 0, unix.ENOSYS
}

// reply tells the kernel what the command's call returns (ENOENT: the
// command is gone, or a fatal signal ended its call).
func (f *fence) reply(id uint64, val int64, errno syscall.Errno) {
	resp := seccompResp{ID: id, Val: val}
	if errno != 0 {
		resp.Val, resp.Error = 0, -int32(errno)
	}
	_ = f.ioctl(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

// ioctl is an ioctl on the listener (open until every call is over).
func (f *fence) ioctl(req uint, arg unsafe.Pointer) error { return notifIoctl(f.listener, req, arg) }

// notifIoctl is an ioctl on a seccomp listener (the fence's, the clone3
// guard's).
func notifIoctl(listener int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), uintptr(req), uintptr(arg))
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
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// inFlight is how many calls are in flight, and a channel closed when
// that changes.
func (f *fence) inFlight() (int, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
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
	_, _ = unix.Write(f.stop, binary.NativeEndian.AppendUint64(nil, 1)) // the loop's wait ends
	f.wg.Wait()
	closeFDs([]int{f.listener, f.stop, f.diag})
}

// errnoOf is the errno a call fails with for err: its own, else EIO.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return unix.EIO
}
