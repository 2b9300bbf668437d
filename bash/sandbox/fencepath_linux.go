package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// errHostSocket is how a command's call to a socket that is not its
// session's fails.
const errHostSocket = unix.EACCES

// destination is the address the fence's call names for a command's addr
// on sock. Where sock is a unix socket and addr names a path (and, with
// dgram, sock is a datagram socket: no other looks up a send's address),
// it is the address of the inode the path leads to in the jail, pinned
// (closePin closes pin after the call), once ownSocket has found it the
// session's; any other address is used as it is.
func (f *fence) destination(t *target, sock int, addr []byte, dgram bool) (dst []byte, pin int, err error) {
	path, ok := unixPath(addr)
	if !ok {
		return addr, -1, nil
	}
	if dom, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || dom != unix.AF_UNIX {
		return addr, -1, nil // the kernel's call refuses it, or reads no path
	}
	typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || dgram && typ != unix.SOCK_DGRAM {
		return addr, -1, nil
	}
	if len(addr) > unix.SizeofSockaddrUnix {
		return nil, -1, unix.EINVAL
	}
	v, err := openView(t, path)
	if err != nil {
		return nil, -1, err
	}
	defer v.close()
	if pin, err = v.open(path); err != nil {
		return nil, -1, err
	}
	if err := f.ownSocket(v, pin, typ); err != nil {
		unix.Close(pin)
		return nil, -1, err
	}
	return pinAddr(pin), pin, nil
}

func closePin(pin int) {
	if pin >= 0 {
		unix.Close(pin)
	}
}

// unixPath is the path a unix socket address names; not for another
// family, an abstract address (in the socket's network namespace, the
// jail's) or an unnamed one.
func unixPath(addr []byte) (string, bool) {
	if len(addr) <= 2 || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX || addr[2] == 0 {
		return "", false
	}
	p := addr[2:]
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return string(p), true
}

// pinAddr is the unix socket address of the inode pin holds.
func pinAddr(pin int) []byte {
	b := binary.NativeEndian.AppendUint16(nil, unix.AF_UNIX)
	b = append(b, "/proc/self/fd/"+strconv.Itoa(pin)...)
	return append(b, 0)
}

// ownSocket checks that pin holds a socket of the session's. One on the
// jail's own tmpfs mounts (its /tmp) is: nothing outside the jail binds
// there, and no inode moves onto another file system. Elsewhere it must
// be the inode a unix socket of the jail's network namespace is bound to.
// The kernel says which inode that is by its device and the low 32 bits
// of its number, which name one inode only on the file systems whose
// inode numbers fit 32 bits and are unique (ext2, ext3, ext4, f2fs): a
// socket on another (btrfs, whose subvolumes number their inodes each
// from the start; xfs and the host's tmpfs, with 64-bit inode numbers;
// overlayfs, FUSE, NFS) is refused, lest a socket the session made alias
// a host service's.
func (f *fence) ownSocket(v *jailView, pin, typ int) error {
	var st unix.Statx_t
	if err := unix.Statx(pin, "", unix.AT_EMPTY_PATH, unix.STATX_TYPE|unix.STATX_INO, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return unix.ECONNREFUSED // as the kernel's connect says
	}
	dev := st.Dev_major<<20 | st.Dev_minor // the kernel's dev_t
	var fs unix.Statfs_t
	if err := unix.Fstatfs(pin, &fs); err != nil {
		return err
	}
	switch {
	case fs.Type == unix.TMPFS_MAGIC && slices.Contains(f.privateDevs(v), dev):
		return nil
	case fs.Type != unix.EXT4_SUPER_MAGIC && fs.Type != unix.F2FS_SUPER_MAGIC || st.Ino > math.MaxUint32:
		return errHostSocket
	}
	states := uint32(math.MaxUint32)
	if typ != unix.SOCK_DGRAM {
		states = 1 << tcpListen // only a listener takes a connection
	}
	if ok, err := f.bound(dev, uint32(st.Ino), states); err != nil || !ok {
		return errHostSocket
	}
	return nil
}

// privateDevs are the devices of the jail's own tmpfs mounts, found once,
// in the mount table of the jail (as the command's thread sees it): a
// mount is listed at the path it is mounted at now, so a command that
// renames a directory above one, and puts a symbolic link or a directory
// of its own in its place, only takes that path out of the list. (A
// lookup of the paths themselves would follow that link, or find that
// directory, on a file system that is not the jail's own.)
func (f *fence) privateDevs(v *jailView) []uint32 {
	f.privOnce.Do(func() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(v.tid) + "/mountinfo")
		if err == nil {
			f.privDevs = tmpfsDevs(string(b), f.private)
		}
	})
	return f.privDevs
}

// tmpfsDevs reads a mountinfo table for the devices (the kernel's dev_t)
// of the tmpfs mounted at each of paths: the last mount listed there, the
// one on top.
func tmpfsDevs(mountinfo string, paths []string) []uint32 {
	top := map[string]uint32{}
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		var major, minor uint32
		if _, err := fmt.Sscanf(f[2], "%d:%d", &major, &minor); err != nil {
			continue
		}
		at := unescapeMount(f[4])
		if g[0] != "tmpfs" {
			delete(top, at)
			continue
		}
		top[at] = major<<20 | minor
	}
	var devs []uint32
	for _, p := range paths {
		if d, ok := top[p]; ok {
			devs = append(devs, d)
		}
	}
	return devs
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sock_diag for unix sockets (linux/unix_diag.h).
const (
	udiagShowVFS = 0x2 // UDIAG_SHOW_VFS
	unixDiagVFS  = 1   // UNIX_DIAG_VFS
	tcpListen    = 10  // TCP_LISTEN, a listening socket's state
)

// bound reports whether a unix socket of the jail's network namespace, in
// one of states (a mask of 1<<state), is bound to the inode numbered ino on
// device dev (the kernel's dev_t), from a dump of them on the jail's
// sock_diag socket.
func (f *fence) bound(dev, ino, states uint32) (bool, error) {
	f.diagMu.Lock()
	defer f.diagMu.Unlock()
	req := make([]byte, unix.NLMSG_HDRLEN+24)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	req[16] = unix.AF_UNIX
	ne.PutUint32(req[20:], states)
	ne.PutUint32(req[28:], udiagShowVFS)
	if err := unix.Sendto(f.diag, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, err
	}
	found := false
	for {
		n, _, flags, _, err := unix.Recvmsg(f.diag, f.diagBuf, nil, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		if flags&unix.MSG_TRUNC != 0 {
			return false, unix.EMSGSIZE
		}
		msgs, err := syscall.ParseNetlinkMessage(f.diagBuf[:n])
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return found, nil
			case unix.NLMSG_ERROR:
				return false, unix.EIO
			}
			found = found || diagBoundTo(m.Data, dev, ino)
		}
	}
}

// diagBoundTo reports whether a struct unix_diag_msg and its attributes
// say the socket is bound to inode ino of device dev.
func diagBoundTo(b []byte, dev, ino uint32) bool {
	const head = 16 // sizeof(struct unix_diag_msg)
	if len(b) < head {
		return false
	}
	for a := b[head:]; len(a) >= 4; {
		l, typ := int(binary.NativeEndian.Uint16(a)), binary.NativeEndian.Uint16(a[2:])
		if l < 4 || l > len(a) {
			return false
		}
		if typ == unixDiagVFS && l >= 12 {
			return binary.NativeEndian.Uint32(a[4:]) == ino && binary.NativeEndian.Uint32(a[8:]) == dev
		}
		a = a[min(len(a), (l+3)&^3):]
	}
	return false
}

// jailView resolves paths as a command of the jail resolves them: from
// the jail's root or the command's working directory, in the jail's
// mounts, following symbolic links within the jail and the magic links
// of the jail's /proc (where self is the command).
type jailView struct {
	root, cwd int // O_PATH descriptors; cwd is -1 unless a path needs it
	tid       int // the command's thread, in our pid namespace
	rootID    *fileID
}

// fileID identifies a directory: its device, inode and mount.
type fileID struct {
	dev, ino, mnt uint64
}

// openView opens the root and, for a relative path, the working
// directory of the command's thread.
func openView(t *target, path string) (*jailView, error) {
	proc := "/proc/" + strconv.Itoa(t.tid) + "/"
	v := &jailView{root: -1, cwd: -1, tid: t.tid}
	var err error
	if v.root, err = unix.Open(proc+"root", unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
		return nil, errGone
	}
	if !strings.HasPrefix(path, "/") {
		if v.cwd, err = unix.Open(proc+"cwd", unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			v.close()
			return nil, errGone
		}
	}
	return v, nil
}

func (v *jailView) close() {
	unix.Close(v.root)
	if v.cwd >= 0 {
		unix.Close(v.cwd)
	}
}

// isRoot reports whether cur is the jail's root.
func (v *jailView) isRoot(cur int) bool {
	if v.rootID == nil {
		id, err := idOf(v.root)
		if err != nil {
			return false
		}
		v.rootID = &id
	}
	id, err := idOf(cur)
	return err == nil && id == *v.rootID
}

func idOf(fd int) (fileID, error) {
	var st unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_MNT_ID, &st)
	return fileID{uint64(st.Dev_major)<<32 | uint64(st.Dev_minor), st.Ino, st.Mnt_id}, err
}

// maxLinks is how many symbolic links one resolution follows (the
// kernel's MAXSYMLINKS).
const maxLinks = 40

// open resolves path in the jail and returns an O_PATH descriptor of what
// it leads to (following a final link too, as connect does). Most paths
// the kernel resolves in one call as the command would, from the jail's
// root (RESOLVE_IN_ROOT: absolute links and .. stay within it) or, for a
// relative path that does not leave it, from the working directory; the
// others (out of the working directory, through /proc/self or a magic
// link) walk one name at a time.
func (v *jailView) open(path string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	start := v.cwd
	if strings.HasPrefix(path, "/") {
		start, how.Resolve = v.root, how.Resolve|unix.RESOLVE_IN_ROOT
	} else {
		how.Resolve |= unix.RESOLVE_BENEATH
	}
	if fd, err := unix.Openat2(start, path, &how); err == nil {
		return fd, nil
	}
	return v.walk(start, path)
}

// walk resolves path from start one name at a time, as the kernel would
// for the command.
func (v *jailView) walk(start int, path string) (int, error) {
	cur, err := unix.Openat(start, ".", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	links := 0
	for rest := path; ; {
		var name string
		name, rest = nextName(rest)
		switch {
		case name == "":
			return cur, nil
		case name == ".":
			continue
		case name == "..":
			if v.isRoot(cur) {
				continue // no way out of the jail's root
			}
		case (name == "self" || name == "thread-self") && onProc(cur):
			self, err := v.self(name == "thread-self")
			if err != nil {
				unix.Close(cur)
				return -1, err
			}
			rest = self + "/" + rest
			continue
		}
		next, err := unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil && isLink(next) {
			unix.Close(next)
			if links++; links > maxLinks {
				unix.Close(cur)
				return -1, unix.ELOOP
			}
			if onProc(cur) {
				// A magic link (cwd, root, fd/N): the kernel jumps to
				// what it is, from the host as from the command.
				next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_CLOEXEC, 0)
			} else {
				var target string
				if target, err = readlinkAt(cur, name); err == nil {
					rest = target + "/" + rest
					if strings.HasPrefix(target, "/") {
						next, err = unix.Openat(v.root, ".", unix.O_PATH|unix.O_CLOEXEC, 0)
					} else {
						continue
					}
				}
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
}

// nextName splits the first name off a path.
func nextName(path string) (name, rest string) {
	path = strings.TrimLeft(path, "/")
	name, rest, _ = strings.Cut(path, "/")
	return name, rest
}

func isLink(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

func onProc(fd int) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(fd, &fs) == nil && fs.Type == unix.PROC_SUPER_MAGIC
}

func readlinkAt(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// self is what /proc/self (or /proc/thread-self) names for the command in
// the jail's /proc: its process's number there (and its thread's).
func (v *jailView) self(thread bool) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(v.tid) + "/status")
	if err != nil {
		return "", errGone
	}
	tgid, pid := innermost(b, "NStgid:"), innermost(b, "NSpid:")
	if tgid == "" || pid == "" {
		return "", unix.ENOENT
	}
	if thread {
		return tgid + "/task/" + pid, nil
	}
	return tgid, nil
}

// innermost is the last number of a status line (the one in the
// innermost pid namespace, the jail's).
func innermost(status []byte, key string) string {
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return f[len(f)-1]
			}
		}
	}
	return ""
}

// tgidOf is the process of thread tid (tid itself if unknown).
func tgidOf(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
				if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					return n
				}
			}
		}
	}
	return tid
}
