package sandbox

import (
	"encoding/binary"
	"math"

	"golang.org/x/sys/unix"
)

// message is a command's message, copied out of its memory for the fence
// to send: the data, an address, and control data whose descriptors
// (SCM_RIGHTS) are the fence's copies of the command's.
type message struct {
	data    []byte
	name    []byte
	control []byte
	fds     []int // the copies, closed by close
}

func (m *message) close() { closeFDs(m.fds) }

// How much of a message the fence copies: a stream socket's send may be
// short (a non-blocking one's often is), so at most streamChunk of it;
// other sockets send a message whole or not at all, up to maxMessage
// (beyond the kernel's default limits: EMSGSIZE either way).
const (
	streamChunk = 256 << 10
	maxMessage  = 1 << 20
	maxControl  = 64 << 10
)

// sendSize is how many of n bytes the fence sends on sock in one call.
func sendSize(sock int, n uint64) (int, error) {
	if n <= streamChunk {
		return int(n), nil
	}
	typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	switch {
	case err != nil:
		return 0, err // ENOTSOCK
	case typ == unix.SOCK_STREAM:
		return streamChunk, nil
	case n > maxMessage:
		return 0, unix.EMSGSIZE
	}
	return int(n), nil
}

// message reads the struct msghdr at ptr, and what it points to, as the
// kernel reads it for sendmsg (a name longer than a sockaddr_storage cut
// to one).
func (t *target) message(sock int, ptr uint64) (*message, error) {
	h, err := t.read(ptr, 56) // sizeof(struct msghdr)
	if err != nil {
		return nil, err
	}
	u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(h[off:]) }
	namePtr, nameLen := u64(0), int32(binary.NativeEndian.Uint32(h[8:]))
	iovPtr, iovLen, ctlPtr, ctlLen := u64(16), u64(24), u64(32), u64(40)
	m := &message{}
	switch {
	case namePtr == 0:
	case nameLen < 0:
		return nil, unix.EINVAL
	default:
		if m.name, err = t.read(namePtr, int(min(nameLen, maxAddr))); err != nil {
			return nil, err
		}
	}
	if iovLen > 1024 {
		return nil, unix.EMSGSIZE
	}
	if m.data, err = t.iovecs(sock, iovPtr, int(iovLen)); err != nil {
		return nil, err
	}
	if ctlLen > 0 {
		if ctlLen > math.MaxInt32 || ctlLen > maxControl {
			return nil, unix.ENOBUFS
		}
		ctl, err := t.read(ctlPtr, int(ctlLen))
		if err != nil {
			return nil, err
		}
		if m.control, m.fds, err = t.controls(ctl); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// iovecs reads the n struct iovec at ptr and the data they point to, as
// much of it as sendSize lets one call send.
func (t *target) iovecs(sock int, ptr uint64, n int) ([]byte, error) {
	raw, err := t.read(ptr, 16*n)
	if err != nil {
		return nil, err
	}
	var total uint64
	remote := make([]unix.RemoteIovec, 0, n)
	for i := range n {
		base, l := binary.NativeEndian.Uint64(raw[16*i:]), binary.NativeEndian.Uint64(raw[16*i+8:])
		if int64(l) < 0 {
			return nil, unix.EINVAL
		}
		total = min(total+l, math.MaxInt32) // the kernel sends no more at once
		remote = append(remote, unix.RemoteIovec{Base: uintptr(base), Len: int(min(l, math.MaxInt32))})
	}
	size, err := sendSize(sock, total)
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	keep := remote[:0] // the vector's first size bytes
	for _, iov := range remote {
		if size == 0 {
			break
		}
		iov.Len = min(iov.Len, size)
		size -= iov.Len
		keep = append(keep, iov)
	}
	return b, t.readv(b, keep)
}

// controls copies control data for the fence to send: the descriptors of
// SCM_RIGHTS become the fence's copies of the command's, which it returns
// to close after; SCM_CREDENTIALS is refused (EPERM), since the kernel
// would check them against the host's credentials, not the command's;
// the rest is copied as it is.
func (t *target) controls(ctl []byte) ([]byte, []int, error) {
	msgs, err := unix.ParseSocketControlMessage(ctl)
	if err != nil {
		return nil, nil, unix.EINVAL
	}
	var out []byte
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET {
			out = appendCmsg(out, m.Header.Level, m.Header.Type, m.Data)
			continue
		}
		switch m.Header.Type {
		case unix.SCM_CREDENTIALS:
			closeFDs(fds)
			return nil, nil, unix.EPERM
		case unix.SCM_RIGHTS:
			theirs, err := unix.ParseUnixRights(&m)
			if err != nil {
				closeFDs(fds)
				return nil, nil, unix.EINVAL
			}
			var ours []int
			for _, fd := range theirs {
				c, err := t.fd(uint64(uint32(fd)))
				if err != nil {
					closeFDs(fds)
					closeFDs(ours)
					return nil, nil, err
				}
				ours = append(ours, c)
			}
			fds = append(fds, ours...)
			out = append(out, unix.UnixRights(ours...)...)
		default:
			out = appendCmsg(out, m.Header.Level, m.Header.Type, m.Data)
		}
	}
	return out, fds, nil
}

// appendCmsg appends one control message.
func appendCmsg(b []byte, level, typ int32, data []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(len(data)))...)
	h := (*unix.Cmsghdr)(bytesPtr(b[start:]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[start+unix.CmsgLen(0):], data)
	return b
}
