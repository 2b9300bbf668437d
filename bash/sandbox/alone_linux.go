package sandbox

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// alone readies an agent of the Landlock layer, which no jail holds: it
// becomes a subreaper (what its shells leave behind is its to reap, as a
// jail's pid 1 reaps the jail's orphans) and gives up every capability,
// on every thread, for good (bwrap --cap-drop ALL in a jail).
func alone() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a subreaper: %w", err)
	}
	// No new privileges, for Landlock and the seccomp filter, on every
	// thread now: not at the claim of a warm agent, where each thread
	// would have to stop for it again.
	if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no new privileges: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil // an unprivileged process has no capability to drop
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := llsys.AllThreadsPrctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := llsys.AllThreadsPrctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("drop the capabilities: %w", e)
	}
	return nil
}

// installFilter installs the seccomp filter read from descriptor fd on
// every thread.
func installFilter(fd int) error {
	f := os.NewFile(uintptr(fd), "seccomp filter")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil || len(b) == 0 || len(b)%8 != 0 {
		return fmt.Errorf("read the seccomp filter: %d bytes, %v", len(b), err)
	}
	// No new privileges: alone set it on every thread (a thread made
	// since inherits it); seccomp refuses a filter on a thread without.
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || nnp != 1 {
		if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no new privileges: %w", err)
		}
	}
	prog := unix.SockFprog{Len: uint16(len(b) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&b[0]))}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		return fmt.Errorf("install the seccomp filter: %w", e)
	}
	return nil
}
