//go:build linux && !amd64

package local

// oldWaitSyscall: only the p-variants of poll, select and epoll_wait are
// known on this architecture (amd64's older calls are in
// waitsys_linux_amd64.go; an architecture that has them too reads as
// one whose programs never wait in them).
func oldWaitSyscall(int64) waitKind { return sysOther }
