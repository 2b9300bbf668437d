package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Placeholders. The entries of gitReadOnly that a git directory lacks are
// made when a jail starts, so that it can bind them read-only: a command
// could otherwise create one (a hook, a commondir naming a copy of the
// repository with a configuration of its choosing, attributes naming a
// filter) and have the user's next git command run its code on the host.
// Each is made as git reads its absence: the hooks and info directories
// empty, commondir naming the git directory itself ("."), config.worktree
// and info/attributes empty. Nothing is followed through a symbolic link,
// nothing existing is changed, and what cannot be made stays missing (the
// jail then has no bind for it).
//
// The repository is the user's: a placeholder is removed when the last
// jail that binds it ends. Jails of other servers may bind the same ones,
// and unlinking a file that is a mount point in another mount namespace
// takes that jail's mount away, so every jail holds a shared flock on
// each placeholder it binds, for its life, and one that ends removes a
// placeholder only if it gets the lock alone (LOCK_EX|LOCK_NB). A jail
// that starts while one is being removed waits for the remover (within
// lockWait), then makes it anew. A placeholder is marked with the
// extended attribute placeholderXattr, where the file system keeps one,
// so that a later jail removes it too when a server was killed before it
// could; without the mark only the jail that made it removes it, if no
// other jail binds it by then.

// placeholderXattr marks a placeholder.
const placeholderXattr = "user.dsh-sandbox.placeholder"

// lockWait bounds the wait for another jail's removal of a placeholder.
const lockWait = 5 * time.Second

// placeholder is what is made for a missing entry: a directory, or a file
// holding content.
type placeholder struct {
	name    string // in its parent directory
	dir     bool
	content string
}

// The placeholders of a git directory; info holds attributes.
var (
	phTop        = []placeholder{{name: "hooks", dir: true}, {name: "commondir", content: "."}, {name: "config.worktree"}}
	phInfo       = placeholder{name: "info", dir: true}
	phAttributes = placeholder{name: "attributes"}
)

// gitHolds are what a jail holds of the git directories in its workspace:
// each directory open, and its placeholders open and locked.
type gitHolds struct {
	dirs []gitDir
	held []heldEntry // parents before their entries
	fds  []int       // entries held open only, as parents (the user's info directory)
}

// gitDir is a git directory found at the jail's start, open.
type gitDir struct {
	path string
	fd   int
	had  []string // which of repoEntries it had then
}

// heldEntry is a placeholder (or an entry that may be another jail's)
// that the jail holds a shared lock on.
type heldEntry struct {
	parent int // its directory, held open by gitHolds
	ph     placeholder
	fd     int
	ours   bool // a placeholder: removed at release unless another jail holds it
}

// hold makes the placeholders git directory gd lacks and holds them. gd
// must lie in workspace; one that does not (it was swapped for somewhere
// else since it was found) gets nothing. An error means a placeholder
// could not be held: the jail must not start.
func (g *gitHolds) hold(workspace, gd string) error {
	dir, err := unix.Open(gd, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if at := fdPath(dir); at == "" || !within(at, realPath(workspace)) {
		unix.Close(dir)
		return nil
	}
	g.dirs = append(g.dirs, gitDir{path: gd, fd: dir, had: present(dir, repoEntries)})
	for _, ph := range phTop {
		if _, err := g.take(dir, ph, false); err != nil {
			return err
		}
	}
	info, err := g.take(dir, phInfo, true)
	if err != nil || info < 0 {
		return err
	}
	_, err = g.take(info, phAttributes, false)
	return err
}

// take holds entry ph of directory parent: made if missing, and locked
// shared if it is, or may be, a placeholder. It returns the entry open
// (-1 if it is neither there nor could be made, or is the user's and not
// to be kept open as a parent); release closes it.
func (g *gitHolds) take(parent int, ph placeholder, parentOf bool) (int, error) {
	for range 3 {
		fd, made, err := openOrMake(parent, ph)
		if err != nil || fd < 0 {
			return -1, nil
		}
		if !made && !mayBePlaceholder(fd, ph) { // the user's own
			if !parentOf {
				unix.Close(fd)
				return -1, nil
			}
			g.fds = append(g.fds, fd)
			return fd, nil
		}
		if err := lockShared(fd, ph.name); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if !linked(parent, ph.name, fd) {
			unix.Close(fd) // another jail removed it meanwhile: make it anew
			continue
		}
		g.held = append(g.held, heldEntry{parent: parent, ph: ph, fd: fd, ours: made || marked(fd)})
		return fd, nil
	}
	return -1, fmt.Errorf("hold the git placeholder %s: it keeps being removed", ph.name)
}

// errMadeMeanwhile: another process made the entry between the look and
// the making.
var errMadeMeanwhile = errors.New("made meanwhile")

// openOrMake opens entry ph of parent, making it first if it is missing
// (made). A link, or an entry of another kind, is not followed: fd -1.
func openOrMake(parent int, ph placeholder) (fd int, made bool, err error) {
	for range 3 {
		fd, err := unix.Openat(parent, ph.name, openFlags(ph), 0)
		switch {
		case err == nil:
			return fd, false, nil
		case !errors.Is(err, unix.ENOENT):
			return -1, false, nil
		}
		fd, err = makePlaceholder(parent, ph)
		if !errors.Is(err, errMadeMeanwhile) {
			return fd, err == nil, err
		}
	}
	return -1, false, nil
}

func openFlags(ph placeholder) int {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	if ph.dir {
		flags |= unix.O_DIRECTORY
	}
	return flags
}

// makePlaceholder makes entry ph of parent, open and marked.
func makePlaceholder(parent int, ph placeholder) (int, error) {
	var fd int
	var err error
	if ph.dir {
		if err = unix.Mkdirat(parent, ph.name, 0o755); err == nil {
			fd, err = unix.Openat(parent, ph.name, openFlags(ph), 0)
		}
	} else {
		fd, err = unix.Openat(parent, ph.name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil && ph.content != "" {
			if _, werr := unix.Write(fd, []byte(ph.content)); werr != nil {
				unix.Close(fd)
				_ = unix.Unlinkat(parent, ph.name, 0)
				return -1, werr
			}
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return -1, errMadeMeanwhile
	}
	if err != nil {
		return -1, err
	}
	_ = unix.Fsetxattr(fd, placeholderXattr, []byte("1"), 0) // where the file system keeps one
	return fd, nil
}

// mayBePlaceholder reports whether the open entry fd is, or could be, a
// placeholder: marked, or as one is made (a file system without extended
// attributes).
func mayBePlaceholder(fd int, ph placeholder) bool {
	return marked(fd) || unchanged(fd, ph)
}

// marked reports whether fd bears the placeholders' mark.
func marked(fd int) bool {
	_, err := unix.Fgetxattr(fd, placeholderXattr, nil)
	return err == nil
}

// unchanged reports whether the open entry fd is as placeholder ph is
// made: an empty directory, or a regular file holding its content.
func unchanged(fd int, ph placeholder) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	if ph.dir {
		return st.Mode&unix.S_IFMT == unix.S_IFDIR && emptyDir(fd)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(len(ph.content)) {
		return false
	}
	buf := make([]byte, len(ph.content)+1)
	n, err := unix.Pread(fd, buf, 0)
	return err == nil && string(buf[:n]) == ph.content
}

// emptyDir reports whether directory fd has no entry. It reads through a
// descriptor of its own: fd's offset stays.
func emptyDir(fd int) bool {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(d)
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(d, buf)
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		if len(names) > 0 {
			return false
		}
	}
}

// lockShared takes a shared flock on fd. Another jail's release holds it
// alone for as long as it takes to remove the entry; a lock held longer
// than lockWait is an error.
func lockShared(fd int, name string) error {
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		return err
	}
	// The blocking flock runs on a descriptor of its own (sharing fd's
	// lock), which it closes once it returns: after the wait has given
	// up, too, releasing a lock taken too late.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		done <- unix.Flock(dup, unix.LOCK_SH)
		unix.Close(dup)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(lockWait):
		return fmt.Errorf("hold the git placeholder %s: another process has held it locked for over %v", name, lockWait)
	}
}

// linked reports whether name in parent is still the entry fd.
func linked(parent int, name string, fd int) bool {
	var at, open unix.Stat_t
	if unix.Fstatat(parent, name, &at, unix.AT_SYMLINK_NOFOLLOW) != nil || unix.Fstat(fd, &open) != nil {
		return false
	}
	return at.Dev == open.Dev && at.Ino == open.Ino
}

// release removes the placeholders no other jail holds, entries before
// their directories, and closes everything. Call it once the jail's
// processes are gone.
func (g *gitHolds) release() {
	for i := len(g.held) - 1; i >= 0; i-- {
		if h := g.held[i]; h.ours {
			removeAlone(h)
		}
	}
	for _, h := range g.held {
		unix.Close(h.fd)
	}
	for _, fd := range g.fds {
		unix.Close(fd)
	}
	for _, d := range g.dirs {
		unix.Close(d.fd)
	}
	*g = gitHolds{}
}

// removeAlone removes placeholder h, if no other jail holds it and it is
// still in place and as it was made.
func removeAlone(h heldEntry) {
	if unix.Flock(h.fd, unix.LOCK_EX|unix.LOCK_NB) != nil || !linked(h.parent, h.ph.name, h.fd) || !unchanged(h.fd, h.ph) {
		return
	}
	flags := 0
	if h.ph.dir {
		flags = unix.AT_REMOVEDIR
	}
	_ = unix.Unlinkat(h.parent, h.ph.name, flags)
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
