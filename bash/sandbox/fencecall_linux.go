package sandbox

import (
	"encoding/binary"
	"errors"
	"math"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// target is the command thread whose call the fence makes.
type target struct {
	f     *fence
	id    uint64 // the notification's
	tid   int    // the thread, in our pid namespace
	pidfd int    // the thread's (the process's before Linux 6.9)
}

// errGone: the command is gone, or a fatal signal ended its call.
var errGone = errors.New("the command's call is over")

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd for a thread.
const pidfdThread = unix.O_EXCL

// target opens a pidfd for the notification's thread. It may be another
// process's, with the same number, if the thread is gone: the handlers
// check that the call is still pending (target.valid) before they act.
func (f *fence) target(n *seccompNotif) (*target, error) {
	tid := int(n.Pid)
	pidfd, err := unix.PidfdOpen(tid, pidfdThread)
	if errors.Is(err, unix.EINVAL) {
		pidfd, err = unix.PidfdOpen(tgidOf(tid), 0)
	}
	if err != nil {
		return nil, errGone
	}
	return &target{f: f, id: n.ID, tid: tid, pidfd: pidfd}, nil
}

func (t *target) close() { unix.Close(t.pidfd) }

// valid checks that the call is still pending: what was read through the
// thread's number (its pidfd, memory and /proc entries) was the thread's.
func (t *target) valid() error {
	id := t.id
	if err := t.f.ioctl(unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)); err != nil {
		return errGone
	}
	return nil
}

// read copies n bytes at addr in the command's memory (EFAULT if they are
// not all there).
func (t *target) read(addr uint64, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b := make([]byte, n)
	return b, t.readv(b, []unix.RemoteIovec{{Base: uintptr(addr), Len: n}})
}

// readv fills b from the command's memory at iovs, whose lengths add up
// to len(b).
func (t *target) readv(b []byte, iovs []unix.RemoteIovec) error {
	for len(iovs) > 0 { // at most IOV_MAX at once
		chunk := iovs[:min(len(iovs), 1024)]
		iovs = iovs[len(chunk):]
		want := 0
		for _, iov := range chunk {
			want += iov.Len
		}
		if want == 0 {
			continue
		}
		got, err := unix.ProcessVMReadv(t.tid, []unix.Iovec{{Base: &b[0], Len: uint64(want)}}, chunk, 0)
		if err != nil || got != want {
			return unix.EFAULT
		}
		b = b[want:]
	}
	return nil
}

// write copies b to addr in the command's memory.
func (t *target) write(addr uint64, b []byte) error {
	if err := t.valid(); err != nil {
		return err
	}
	got, err := unix.ProcessVMWritev(t.tid, []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}, 0)
	if err != nil || got != len(b) {
		return unix.EFAULT
	}
	return nil
}

// fd takes a copy of the command's descriptor num (an int argument: its
// low 32 bits), the same open file.
func (t *target) fd(num uint64) (int, error) {
	if int32(num) < 0 {
		return -1, unix.EBADF
	}
	fd, err := unix.PidfdGetfd(t.pidfd, int(int32(num)), 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, errGone
	}
	return fd, err
}

// signal sends sig to the command's thread (its process before 6.9).
func (t *target) signal(sig syscall.Signal) {
	_ = unix.PidfdSendSignal(t.pidfd, sig, nil, 0)
}

// maxAddr is the size of struct sockaddr_storage: no address is longer.
const maxAddr = 128

// addr reads a socket address of length n (a socklen_t) at ptr.
func (t *target) addr(ptr uint64, n uint64) ([]byte, error) {
	if int32(n) < 0 || int32(n) > maxAddr {
		return nil, unix.EINVAL
	}
	return t.read(ptr, int(int32(n)))
}

// connect is connect(fd, addr, addrlen).
func (f *fence) connect(t *target, sock int, n *seccompNotif) (int64, error) {
	addr, err := t.addr(n.Args[1], n.Args[2])
	if err != nil {
		return 0, err
	}
	dst, pin, err := f.destination(t, sock, addr, false)
	if err != nil {
		return 0, err
	}
	defer closePin(pin)
	if err := t.valid(); err != nil {
		return 0, err
	}
	return 0, rawConnect(sock, dst)
}

// sendto is sendto(fd, buf, len, flags, addr, addrlen), with an address
// (the filter lets the others through).
func (f *fence) sendto(t *target, sock int, n *seccompNotif) (int64, error) {
	addr, err := t.addr(n.Args[4], n.Args[5])
	if err != nil {
		return 0, err
	}
	size, err := sendSize(sock, min(n.Args[2], math.MaxInt32))
	if err != nil {
		return 0, err
	}
	data, err := t.read(n.Args[1], size)
	if err != nil {
		return 0, err
	}
	return f.send(t, sock, &message{data: data, name: addr}, int(int32(n.Args[3])))
}

// sendmsg is sendmsg(fd, msg, flags).
func (f *fence) sendmsg(t *target, sock int, n *seccompNotif) (int64, error) {
	m, err := t.message(sock, n.Args[1])
	if err != nil {
		return 0, err
	}
	defer m.close()
	return f.send(t, sock, m, int(int32(n.Args[2])))
}

// sendmmsg is sendmmsg(fd, msgvec, vlen, flags): each message is sent as
// sendmsg sends it, and the count of bytes sent written to its msg_len;
// an error after the first message ends the batch short.
func (f *fence) sendmmsg(t *target, sock int, n *seccompNotif) (int64, error) {
	const entry = 64 // sizeof(struct mmsghdr)
	vec, vlen := n.Args[1], min(uint32(n.Args[2]), 1024)
	flags := int(int32(n.Args[3]))
	sent := 0
	for ; sent < int(vlen); sent++ {
		m, err := t.message(sock, vec+uint64(sent)*entry)
		var size int64
		if err == nil {
			size, err = f.send(t, sock, m, flags)
			m.close()
		}
		if err == nil {
			err = t.write(vec+uint64(sent)*entry+56, binary.NativeEndian.AppendUint32(nil, uint32(size)))
		}
		if err != nil && sent == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	return int64(sent), nil
}

// send sends m on sock for the command: to the pinned inode where m's
// address names a unix datagram socket by path (what only such a socket
// looks up), with a SIGPIPE for the command where the kernel would have
// sent it one.
func (f *fence) send(t *target, sock int, m *message, flags int) (int64, error) {
	dst, pin, err := f.destination(t, sock, m.name, true)
	if err != nil {
		return 0, err
	}
	defer closePin(pin)
	if err := t.valid(); err != nil {
		return 0, err
	}
	n, err := rawSendmsg(sock, m.data, m.control, dst, flags|unix.MSG_NOSIGNAL)
	if errors.Is(err, unix.EPIPE) && flags&unix.MSG_NOSIGNAL == 0 {
		t.signal(unix.SIGPIPE)
	}
	return int64(n), err
}

// rawConnect is connect(2) with the address as bytes.
func rawConnect(sock int, addr []byte) error {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(bytesPtr(addr)), uintptr(len(addr)))
	if e != 0 {
		return e
	}
	return nil
}

// rawSendmsg is sendmsg(2) with the address as bytes, again after EINTR
// (which it returns only when nothing was sent).
func rawSendmsg(sock int, data, control, name []byte, flags int) (int, error) {
	var h unix.Msghdr
	var iov unix.Iovec
	if len(data) > 0 {
		iov = unix.Iovec{Base: &data[0], Len: uint64(len(data))}
		h.Iov, h.Iovlen = &iov, 1
	}
	h.Name, h.Namelen = (*byte)(bytesPtr(name)), uint32(len(name))
	h.Control, h.Controllen = (*byte)(bytesPtr(control)), uint64(len(control))
	for {
		n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(sock), uintptr(unsafe.Pointer(&h)), uintptr(flags))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
