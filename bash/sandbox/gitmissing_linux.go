package sandbox

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// makeMissing makes the entries of gitReadOnly that git dir gd lacks, each
// as git reads its absence, so that a jail can bind them read-only: a
// command could otherwise create one (a hook, a commondir naming a copy of
// the repository with a configuration of its choosing, attributes naming a
// filter) and have the user's next git command run its code on the host.
// The hooks and info directories are made empty; commondir names gd itself
// ("."), which git reads as if there were none; config.worktree and
// info/attributes are empty. Nothing is followed through a symbolic link
// and nothing existing is changed; what cannot be made stays missing (the
// jail then has no bind for it, as before).
// gd must lie in workspace.
func makeMissing(workspace, gd string) {
	dir, err := unix.Open(gd, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(dir)
	if at := fdPath(dir); at == "" || !within(at, realPath(workspace)) {
		return // gd was swapped for somewhere else since it was found
	}
	_ = unix.Mkdirat(dir, "hooks", 0o755)
	makeFile(dir, "commondir", ".")
	makeFile(dir, "config.worktree", "")
	if err := unix.Mkdirat(dir, "info", 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return
	}
	info, err := unix.Openat(dir, "info", unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(info)
	makeFile(info, "attributes", "")
}

// makeFile makes file name in directory dir holding text, unless a file of
// that name exists (or a link: it is not followed).
func makeFile(dir int, name, text string) {
	fd, err := unix.Openat(dir, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	_, _ = unix.Write(fd, []byte(text))
}

// fdPath is the path the kernel gives directory descriptor fd ("" if it
// cannot tell).
func fdPath(fd int) string {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return ""
	}
	return p
}
