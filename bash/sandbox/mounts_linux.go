package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// mountOp is one mount of a jail's: bwrap makes it at a jail's start
// (mountArgs), or the host in a pooled jail when a session claims it
// (mountIn).
type mountOp struct {
	kind mountKind
	path string // the host's path, bound onto itself; the covered path for a hide
}

type mountKind int

const (
	mountBind     mountKind = iota // read-write
	mountReadOnly                  // read-only
	mountHideDir                   // covered with an empty read-only tmpfs
	mountHideFile                  // covered with /dev/null, read-only
)

// mountArgs are bwrap's options that make ops.
func mountArgs(ops []mountOp) []string {
	var a []string
	for _, op := range ops {
		switch op.kind {
		case mountBind:
			a = append(a, "--bind", op.path, op.path)
		case mountReadOnly:
			a = append(a, "--ro-bind", op.path, op.path)
		case mountHideDir:
			a = append(a, "--tmpfs", op.path, "--remount-ro", op.path)
		case mountHideFile:
			a = append(a, "--ro-bind", "/dev/null", op.path)
		}
	}
	return a
}

// mountIn makes ops, in order, in the mount namespace mntns (a pooled
// jail's), as bwrap makes them at a jail's start: each source is cloned
// here, in the host's mount namespace, with its submounts (open_tree), as
// bwrap resolves it; a thread of its own then enters the jail's namespace
// and attaches each clone at its path there, making the directories it
// lacks (in the jail's /tmp). The clones are nosuid and nodev, as bwrap's
// binds are, and slaves of the host's mounts: what the host mounts later
// shows in the jail, and nothing mounted in the jail reaches the host.
//
// Entering another mount namespace takes CAP_SYS_ADMIN and CAP_SYS_CHROOT
// in the server's own user namespace: a server run as root.
func mountIn(mntns int, ops []mountOp) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread, which the process's /proc/self shows and
			// which never ends: another enters, while this one is held.
			done <- mountIn(mntns, ops)
			runtime.UnlockOSThread()
			return
		}
		// Never unlocked: the thread, in the jail's namespace once
		// entered, ends with this goroutine, and runs nothing else.
		done <- mountInThread(mntns, ops)
	}()
	return <-done
}

func mountInThread(mntns int, ops []mountOp) error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the thread's file system attributes: %w", err)
	}
	trees := make([]int, len(ops))
	for i := range trees {
		trees[i] = -1
	}
	defer func() {
		for _, fd := range trees {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, op := range ops {
		fd, err := detached(op)
		if err != nil {
			return err
		}
		trees[i] = fd
	}
	if err := unix.Setns(mntns, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter the jail's mount namespace: %w", err)
	}
	for i, op := range ops {
		if err := attach(trees[i], op.path); err != nil {
			return err
		}
	}
	return nil
}

// detached makes op's mount, not yet attached anywhere: a clone of its
// path's tree (of /dev/null for a hidden file), or a new tmpfs.
func detached(op mountOp) (int, error) {
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	src := op.path
	switch op.kind {
	case mountHideDir:
		return emptyTmpfs(op.path)
	case mountHideFile:
		src = "/dev/null"
		fallthrough
	case mountReadOnly:
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, fmt.Errorf("clone the mount of %s: %w", src, err)
	}
	ma := &unix.MountAttr{Attr_set: attr, Propagation: unix.MS_SLAVE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, ma); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("set the attributes of the mount of %s: %w", src, err)
	}
	return fd, nil
}

// emptyTmpfs is an empty read-only tmpfs (bwrap's --tmpfs, --remount-ro).
func emptyTmpfs(path string) (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("make the tmpfs that hides %s: %w", path, err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "mode", "0755"); err != nil {
		return -1, fmt.Errorf("make the tmpfs that hides %s: %w", path, err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("make the tmpfs that hides %s: %w", path, err)
	}
	fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, fmt.Errorf("mount the tmpfs that hides %s: %w", path, err)
	}
	return fd, nil
}

// attach attaches the detached mount tree at path, in the mount
// namespace the thread is in, making the directories that lead to a
// directory's mount point where they are missing (as bwrap does, in the
// jail's /tmp); symbolic links on the way are followed, as mount(2)
// follows them.
func attach(tree int, path string) error {
	dst, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ENOENT) && isDirFD(tree) {
		if err = os.MkdirAll(path, 0o755); err == nil {
			dst, err = unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
		}
	}
	if err != nil {
		return fmt.Errorf("the mount point %s in the jail: %w", path, err)
	}
	defer unix.Close(dst)
	if err := unix.MoveMount(tree, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount %s in the jail: %w", path, err)
	}
	return nil
}

// isDirFD reports whether fd is a directory.
func isDirFD(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}
