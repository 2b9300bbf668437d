package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

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
// The workspace ws is ops' first when any lies in it; the paths in it are
// found from it, on the host and in the jail, beneath it and through no
// symbolic link: the workspace is the sessions' to change, and a link
// there must not have a bind or a hide land elsewhere (bwrap, whose
// mounts are made before the jail is its root, refuses such a link).
//
// Entering another mount namespace takes CAP_SYS_ADMIN and CAP_SYS_CHROOT
// in the server's own user namespace: a server run as root. It is never
// the main thread's (the process's /proc/self shows the main thread's
// namespaces, and Go never ends that thread).
func mountIn(mntns int, ws string, ops []mountOp) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread: another enters, while this one is held.
			done <- mountIn(mntns, ws, ops)
			runtime.UnlockOSThread()
			return
		}
		// Never unlocked: the thread, in the jail's namespace once
		// entered, ends with this goroutine, and runs nothing else.
		done <- mountInThread(mntns, ws, ops)
	}()
	return <-done
}

func mountInThread(mntns int, ws string, ops []mountOp) error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the thread's file system attributes: %w", err)
	}
	hostWS, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the workspace: %w", err)
	}
	defer unix.Close(hostWS)
	trees := make([]int, len(ops))
	for i := range trees {
		trees[i] = -1
	}
	defer closeFDs(trees)
	for i, op := range ops {
		if trees[i], err = detached(op, inWorkspace(ws, op.path, i), hostWS); err != nil {
			return err
		}
	}
	if err := unix.Setns(mntns, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter the jail's mount namespace: %w", err)
	}
	for i, op := range ops {
		rel := inWorkspace(ws, op.path, i)
		if rel != "" && (ops[0].path != ws || ops[0].kind != mountBind) {
			return fmt.Errorf("mount %s in the jail: the workspace is not bound first", op.path)
		}
		if err := attach(trees[i], op.path, rel, trees[0]); err != nil {
			return err
		}
	}
	return nil
}

// inWorkspace is path relative to the workspace ws when it lies in it
// and is not the workspace itself (op i, the first, binds that), else "".
func inWorkspace(ws, path string, i int) string {
	rel, err := filepath.Rel(ws, path)
	if i == 0 || err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return rel
}

// beneath resolves rel beneath the directory dir, through no symbolic
// link.
func beneath(dir int, rel string) (int, error) {
	return unix.Openat2(dir, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
}

// detached makes op's mount, not yet attached anywhere: a clone of its
// path's tree (of /dev/null for a hidden file), or a new tmpfs. rel, when
// set, is its path in the workspace, which hostWS is open on.
func detached(op mountOp, rel string, hostWS int) (int, error) {
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	dir, src := unix.AT_FDCWD, op.path
	switch op.kind {
	case mountHideDir:
		return emptyTmpfs(op.path)
	case mountHideFile:
		src, rel = "/dev/null", ""
		fallthrough
	case mountReadOnly:
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_RECURSIVE)
	if rel != "" {
		fd, err := beneath(hostWS, rel)
		if err != nil {
			return -1, fmt.Errorf("find %s in the workspace: %w", op.path, err)
		}
		defer unix.Close(fd)
		dir, src, flags = fd, "", flags|unix.AT_EMPTY_PATH
	}
	fd, err := unix.OpenTree(dir, src, flags)
	if err != nil {
		return -1, fmt.Errorf("clone the mount of %s: %w", op.path, err)
	}
	ma := &unix.MountAttr{Attr_set: attr, Propagation: unix.MS_SLAVE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, ma); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("set the attributes of the mount of %s: %w", op.path, err)
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
// namespace the thread is in: beneath the workspace's mount (ws, the
// workspace's tree, attached first) through no symbolic link when rel is
// its path there; else from the root, following links as mount(2) does,
// making the directories that lead to a directory's mount point where
// they are missing (as bwrap does, in the jail's /tmp).
func attach(tree int, path, rel string, ws int) error {
	var dst int
	var err error
	if rel != "" {
		dst, err = beneath(ws, rel)
	} else {
		dst, err = openMountPoint(path, isDirFD(tree))
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

// openMountPoint opens path, made first if missing and dir.
func openMountPoint(path string, dir bool) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, how)
	if errors.Is(err, unix.ENOENT) && dir {
		if err = os.MkdirAll(path, 0o755); err == nil {
			fd, err = unix.Openat2(unix.AT_FDCWD, path, how)
		}
	}
	return fd, err
}

// isDirFD reports whether fd is a directory.
func isDirFD(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}
