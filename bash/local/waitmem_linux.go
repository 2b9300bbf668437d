//go:build linux

package local

import (
	"encoding/binary"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// What a sleeping thread waits on can be in its process's memory: the
// descriptors of a poll or select set, a timeout. They are read with
// process_vm_readv, which takes the access ptrace would need; the
// program chose what is there, so every size read is bounded.

// maxWatched bounds the descriptors read of one poll or select set.
const maxWatched = 1 << 12

// pollWatches reads the poll set of n entries at addr in pid's memory
// and reports whether one waits for the input to be readable.
func (pr *prober) pollWatches(pid int, addr, n uint64) (bool, error) {
	n = min(n, maxWatched)
	buf := make([]byte, 8*n) // struct pollfd { int fd; short events, revents; }
	if err := readMemory(pid, addr, buf); err != nil {
		return false, err
	}
	for i := 0; i+8 <= len(buf); i += 8 {
		fd := int32(binary.NativeEndian.Uint32(buf[i:]))
		if binary.NativeEndian.Uint16(buf[i+4:])&(unix.POLLIN|pollRdNorm) == 0 {
			continue
		}
		if is, err := pr.fdIs(pid, int(fd)); is || err != nil {
			return is, err
		}
	}
	return false, nil
}

// selectWatches reads the read set of nfds descriptors at addr in pid's
// memory and reports whether it holds the input.
func (pr *prober) selectWatches(pid int, nfds, addr uint64) (bool, error) {
	if addr == 0 {
		return false, nil
	}
	nfds = min(nfds, maxWatched)
	buf := make([]byte, 8*((nfds+63)/64))
	if err := readMemory(pid, addr, buf); err != nil {
		return false, err
	}
	for fd := range int(nfds) {
		if buf[fd/8]&(1<<(fd%8)) == 0 {
			continue
		}
		if is, err := pr.fdIs(pid, fd); is || err != nil {
			return is, err
		}
	}
	return false, nil
}

// pollRdNorm is POLLRDNORM, which x/sys/unix leaves out: normal data is
// readable.
const pollRdNorm = 0x40

// readPair reads two 64-bit integers at addr of pid's memory: a struct
// timespec or timeval of a 64-bit program.
func readPair(pid int, addr uint64) (a, b int64, err error) {
	if strconv.IntSize != 64 {
		return 0, 0, errors.New("timeouts are read on 64-bit systems only")
	}
	var buf [16]byte
	if err := readMemory(pid, addr, buf[:]); err != nil {
		return 0, 0, err
	}
	return int64(binary.NativeEndian.Uint64(buf[:])), int64(binary.NativeEndian.Uint64(buf[8:])), nil
}

// readMemory reads len(buf) bytes at addr of pid's memory. A bad pointer
// reads as zeroes: the call it was passed to fails at once.
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
		clear(buf)
		return nil
	case err != nil:
		return err
	case n != len(buf):
		return errors.New("short read of a process's memory")
	}
	return nil
}
