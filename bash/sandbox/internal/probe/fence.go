//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeFence is the system call probe's "fence" commands, each an
// attempt to reach a unix socket by path, printing what came of it:
//
//	connect stream|dgram|seqpacket PATH [nonblock]  connect (a datagram socket then sends "x")
//	sendto PATH, sendmsg PATH, sendmmsg PATH       an unconnected datagram socket sends "x" there
//	race-addr OWN HOST   connects again and again, naming OWN (a socket the probe binds) while
//	                     another thread keeps rewriting the address to HOST and back
//	race-msg OWN HOST    sendmsg again and again, another thread switching msg_name between them
//	race-path OWN HOST   connects to a link again and again, leading to OWN (a socket the probe
//	                     binds) while another thread keeps exchanging it with one leading to HOST
//	race-fd HOST         connects a TCP socket's descriptor to HOST again and again, while
//	                     another thread keeps dup2()ing a unix socket onto it and back
//	own-sendmmsg PATH    binds a datagram socket at PATH and sends it two datagrams with sendmmsg
//	bench N              N connects to a listener of its own on TCP loopback, then to one on a
//	                     unix socket in /tmp, blocking, then not, and N sendmsg on a socket pair;
//	                     prints the mean time of each, in ns
func probeFence(args []string, w io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintf(w, "fence: usage %q\n", args)
		return 2
	}
	switch args[0] {
	case "connect":
		if len(args) < 3 {
			return 2
		}
		fmt.Fprintf(w, "connect: %s\n", fenceConnect(args[1], args[2], len(args) > 3))
	case "sendto", "sendmsg", "sendmmsg":
		fmt.Fprintf(w, "%s: %s\n", args[0], fenceSend(args[0], args[1]))
	case "race-addr", "race-msg", "race-path":
		if len(args) < 3 {
			return 2
		}
		fmt.Fprintf(w, "%s: %s\n", args[0], fenceRace(args[0], args[1], args[2]))
	case "own-sendmmsg":
		fmt.Fprintf(w, "own-sendmmsg: %s\n", fenceOwnSendmmsg(args[1]))
	case "race-fd":
		fmt.Fprintf(w, "race-fd: %s\n", fenceRaceFD(args[1]))
	case "bench":
		n, _ := strconv.Atoi(args[1])
		fmt.Fprintln(w, fenceBench(n))
	default:
		fmt.Fprintf(w, "fence: unknown %q\n", args)
		return 2
	}
	return 0
}

var sockTypes = map[string]int{"stream": unix.SOCK_STREAM, "dgram": unix.SOCK_DGRAM, "seqpacket": unix.SOCK_SEQPACKET}

// result is how a probe's call ended.
func result(err error) string {
	if err != nil {
		return err.Error()
	}
	return "succeeded"
}

func fenceConnect(typ, path string, nonblock bool) string {
	flags := unix.SOCK_CLOEXEC
	if nonblock {
		flags |= unix.SOCK_NONBLOCK
	}
	fd, err := unix.Socket(unix.AF_UNIX, sockTypes[typ]|flags, 0)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return err.Error()
	}
	if typ == "dgram" {
		if _, err := unix.Write(fd, []byte("x")); err != nil {
			return "connected, then " + err.Error()
		}
	}
	return "succeeded"
}

func fenceSend(how, path string) string {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer unix.Close(fd)
	to := &unix.SockaddrUnix{Name: path}
	switch how {
	case "sendto":
		err = unix.Sendto(fd, []byte("x"), 0, to)
	case "sendmsg":
		err = unix.Sendmsg(fd, []byte("x"), nil, to, 0)
	case "sendmmsg":
		err = sendmmsgTo(fd, path)
	}
	return result(err)
}

// sendmmsgTo sends two datagrams, "x" and "y", to path with one sendmmsg.
func sendmmsgTo(fd int, path string) error {
	name := sockaddrUnix(path)
	data := []byte("xy")
	iov := []unix.Iovec{{Base: &data[0], Len: 1}, {Base: &data[1], Len: 1}}
	type mmsghdr struct {
		hdr unix.Msghdr
		len uint32
		_   uint32
	}
	var msgs [2]mmsghdr
	for i := range msgs {
		msgs[i].hdr.Name, msgs[i].hdr.Namelen = &name[0], uint32(len(name))
		msgs[i].hdr.Iov, msgs[i].hdr.Iovlen = &iov[i], 1
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), 2, 0, 0, 0)
	runtime.KeepAlive(data)
	runtime.KeepAlive(name)
	if e != 0 {
		return e
	}
	if n != 2 || msgs[0].len != 1 || msgs[1].len != 1 {
		return fmt.Errorf("sent %d (lengths %d, %d)", n, msgs[0].len, msgs[1].len)
	}
	return nil
}

// fenceOwnSendmmsg binds a datagram socket at path, sends it "x" and "y"
// with one sendmmsg from another, and reads them back.
func fenceOwnSendmmsg(path string) string {
	srv, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Bind(srv, &unix.SockaddrUnix{Name: path})
	}
	if err != nil {
		return err.Error()
	}
	defer unix.Close(srv)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err.Error()
	}
	defer unix.Close(fd)
	if err := sendmmsgTo(fd, path); err != nil {
		return err.Error()
	}
	got := ""
	buf := make([]byte, 8)
	for range 2 {
		n, _, err := unix.Recvfrom(srv, buf, unix.MSG_DONTWAIT)
		if err != nil {
			return "received " + strconv.Quote(got) + ", then " + err.Error()
		}
		got += string(buf[:n])
	}
	return "received " + strconv.Quote(got)
}

// sockaddrUnix is a struct sockaddr_un naming path, as bytes.
func sockaddrUnix(path string) []byte {
	b := make([]byte, unix.SizeofSockaddrUnix)
	binary.NativeEndian.PutUint16(b, unix.AF_UNIX)
	copy(b[2:], path)
	return b
}

// raceFor is how long each race runs, once its flipper has flipped
// raceFlips times (a loaded machine may keep it from running at first);
// raceTries how many calls it makes at most, raceMax how long at most.
const (
	raceFor   = 150 * time.Millisecond
	raceFlips = 1000
	raceTries = 20000
	raceMax   = 5 * time.Second
)

// racing reports whether a race is still on, after i calls.
func racing(i int, start time.Time, flips *atomic.Int64) bool {
	d := time.Since(start)
	return i < raceTries && d < raceMax && (d < raceFor || flips.Load() < raceFlips)
}

// shared is memory outside Go's heap, which another thread of the probe
// changes under the kernel's (and the fence's) reads: not Go's data, so
// outside the race detector's view.
func shared(size int) []byte {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		panic(err)
	}
	return b
}

// flipper runs flip on a thread of its own until stop is set, counting
// in flips.
func flipper(stop *atomic.Bool, flips *atomic.Int64, flip func(i int)) chan struct{} {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			flip(i)
			flips.Add(1)
		}
	}()
	return done
}

// fenceRace binds own (a stream or, for race-msg, a datagram socket),
// then makes calls naming own while a flipper changes the name to host
// and back: in the address itself (race-addr), in the msghdr's pointer
// to it (race-msg), or where a link leads (race-path). It prints how many
// calls reached own, or that one succeeded without reaching it (and
// stops there).
func fenceRace(how, own, host string) string {
	typ := unix.SOCK_STREAM
	if how == "race-msg" {
		typ = unix.SOCK_DGRAM
	}
	srv, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Bind(srv, &unix.SockaddrUnix{Name: own})
	}
	if err == nil && typ == unix.SOCK_STREAM {
		err = unix.Listen(srv, 4096)
	}
	if err != nil {
		return "own socket: " + err.Error()
	}
	defer unix.Close(srv)
	mem := shared(4096)
	defer unix.Munmap(mem)
	ownAddr, hostAddr := sockaddrUnix(own), sockaddrUnix(host)
	var stop atomic.Bool
	var flips atomic.Int64
	var done chan struct{}
	var call func() (escaped bool, err error) // escaped: the call succeeded, and own got nothing
	switch how {
	case "race-path":
		// Two links side by side, exchanged in one rename.
		a, b := filepath.Join(filepath.Dir(own), "a"), filepath.Join(filepath.Dir(own), "b")
		if err := errors.Join(unix.Symlink(own, a), unix.Symlink(host, b)); err != nil {
			return "links: " + err.Error()
		}
		addr := sockaddrUnix(a)
		done = flipper(&stop, &flips, func(int) { _ = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) })
		call = func() (bool, error) { return connectRaw(srv, addr) }
	case "race-addr":
		addr := mem[:len(ownAddr)]
		copy(addr, ownAddr)
		done = flipper(&stop, &flips, func(i int) { copy(addr, [][]byte{hostAddr, ownAddr}[i%2]) })
		call = func() (bool, error) { return connectRaw(srv, addr) }
	default:
		// Two addresses, and a msghdr whose msg_name the flipper points
		// at one and then the other, in one store.
		copy(mem[256:], ownAddr)
		copy(mem[512:], hostAddr)
		data := mem[1024:1025]
		data[0] = 'x'
		iov := (*unix.Iovec)(unsafe.Pointer(&mem[1056]))
		iov.Base, iov.Len = &data[0], 1
		h := (*unix.Msghdr)(unsafe.Pointer(&mem[0]))
		h.Name, h.Namelen, h.Iov, h.Iovlen = &mem[256], uint32(len(ownAddr)), iov, 1
		name := (*uintptr)(unsafe.Pointer(&h.Name))
		ptrs := [2]uintptr{uintptr(unsafe.Pointer(&mem[512])), uintptr(unsafe.Pointer(&mem[256]))}
		done = flipper(&stop, &flips, func(i int) { atomic.StoreUintptr(name, ptrs[i%2]) })
		buf := make([]byte, 16)
		call = func() (bool, error) {
			err := sendmsgRaw(h)
			got := 0
			for ; ; got++ { // drained, lest own's queue fill
				if _, _, rerr := unix.Recvfrom(srv, buf, unix.MSG_DONTWAIT); rerr != nil {
					break
				}
			}
			return err == nil && got == 0, err
		}
	}
	defer func() { stop.Store(true); <-done }()
	reached, failed := 0, 0
	start := time.Now()
	for i := 0; racing(i, start, &flips); i++ {
		escaped, err := call()
		switch {
		case escaped:
			return fmt.Sprintf("escaped after %d calls", i)
		case err == nil:
			reached++
		default:
			failed++
		}
	}
	return fmt.Sprintf("%d reached own, %d failed", reached, failed)
}

// connectRaw connects a new stream socket to the address in addr (shared
// memory), and accepts what reached srv, own's listener; escaped says
// the connect succeeded and nothing reached it.
func connectRaw(srv int, addr []byte) (escaped bool, err error) {
	// Non-blocking: a full backlog (the host service's, should the
	// fence let one through) fails the connect instead of blocking it.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
	if e != 0 {
		return false, e
	}
	c, _, err := unix.Accept4(srv, unix.SOCK_CLOEXEC)
	if err != nil {
		return true, nil
	}
	unix.Close(c)
	return false, nil
}

// sendmsgRaw sends h (in shared memory) on a new datagram socket.
func sendmsgRaw(h *unix.Msghdr) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(h)), unix.MSG_DONTWAIT)
	if e != 0 {
		return e
	}
	return nil
}

// fenceRaceFD connects descriptor n, a TCP socket, to host (a unix
// socket's path) again and again, while a flipper dup2()s a unix stream
// socket onto n and the TCP socket back. It prints that a connect
// succeeded (and stops there), or that none did.
func fenceRaceFD(host string) string {
	tcp, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer unix.Close(tcp)
	n, err := unix.Dup(tcp)
	if err != nil {
		return "dup: " + err.Error()
	}
	defer unix.Close(n)
	uds, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer unix.Close(uds)
	socks := [2]int{uds, tcp}
	addr := sockaddrUnix(host)
	var stop atomic.Bool
	var flips atomic.Int64
	done := flipper(&stop, &flips, func(i int) { _ = unix.Dup3(socks[i%2], n, unix.O_CLOEXEC) })
	defer func() { stop.Store(true); <-done }()
	start := time.Now()
	for i := 0; racing(i, start, &flips); i++ {
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(n), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
		if e == 0 {
			return fmt.Sprintf("escaped after %d calls", i)
		}
	}
	return "0 reached"
}

// fenceBench times n connects to a TCP listener on loopback, then to a
// unix socket in /tmp, each of the probe's own, from a blocking socket,
// then from a non-blocking one (waiting in poll for it to be connected,
// as Go's runtime does), and n sendmsg (and reads) of 64 bytes on a
// connected pair. It prints the mean time of each, in ns.
func fenceBench(n int) string {
	path := fmt.Sprintf("/tmp/bench-%d.sock", unix.Getpid())
	defer unix.Unlink(path)
	listen := func(family int, sa unix.Sockaddr) (int, unix.Sockaddr, error) {
		l, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Bind(l, sa)
		}
		if err == nil {
			err = unix.Listen(l, 4096)
		}
		if err == nil {
			sa, err = unix.Getsockname(l)
		}
		return l, sa, err
	}
	tcpL, tcpA, err := listen(unix.AF_INET, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	if err != nil {
		return "bench: " + err.Error()
	}
	defer unix.Close(tcpL)
	udsL, udsA, err := listen(unix.AF_UNIX, &unix.SockaddrUnix{Name: path})
	if err != nil {
		return "bench: " + err.Error()
	}
	defer unix.Close(udsL)
	out := "bench:"
	for _, nonblock := range []bool{false, true} {
		for _, c := range []struct {
			family, l int
			sa        unix.Sockaddr
		}{{unix.AF_INET, tcpL, tcpA}, {unix.AF_UNIX, udsL, udsA}} {
			start := time.Now()
			for range n {
				if err := benchConnect(c.family, c.sa, c.l, nonblock); err != nil {
					return "bench: " + err.Error()
				}
			}
			out += fmt.Sprintf(" %d", time.Since(start).Nanoseconds()/int64(n))
		}
	}
	// sendmsg of 64 bytes on a connected socket pair, which the fence
	// sees too (the filter cannot tell whether a msghdr has an address).
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "bench: " + err.Error()
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	msg, buf := make([]byte, 64), make([]byte, 64)
	start := time.Now()
	for range n {
		if err := unix.Sendmsg(pair[0], msg, nil, nil, 0); err != nil {
			return "bench: " + err.Error()
		}
		if _, err := unix.Read(pair[1], buf); err != nil {
			return "bench: " + err.Error()
		}
	}
	return out + fmt.Sprintf(" %d", time.Since(start).Nanoseconds()/int64(n))
}

// benchConnect connects a new socket to sa, where l listens, and accepts.
func benchConnect(family int, sa unix.Sockaddr, l int, nonblock bool) error {
	flags := unix.SOCK_STREAM | unix.SOCK_CLOEXEC
	if nonblock {
		flags |= unix.SOCK_NONBLOCK
	}
	fd, err := unix.Socket(family, flags, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	err = unix.Connect(fd, sa)
	if err == unix.EINPROGRESS {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		if _, err = unix.Poll(pfd, 5000); err == nil {
			var so int
			if so, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && so != 0 {
				err = unix.Errno(so)
			}
		}
	}
	if err != nil {
		return err
	}
	c, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
	if err == nil {
		unix.Close(c)
	}
	return err
}
