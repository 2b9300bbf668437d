//go:build unix

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirHandle is an open directory. Every operation on its entries goes
// through its descriptor (openat, mkdirat, unlinkat), so replacing the
// directory, or any directory above it, with a symlink after it was opened
// redirects nothing.
type dirHandle struct {
	fd   int
	path string // where it was opened, for the paths we hand out
}

// openDirPath opens a directory by path, following symlinks: it is the
// configured parent of our own directories, not one of them.
func openDirPath(path string) (*dirHandle, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: abs, Err: err}
	}
	return &dirHandle{fd: fd, path: abs}, nil
}

// mkdirPrivate makes the directory name (0700) in d and opens it; with
// exclusive, one that already exists is an error.
func (d *dirHandle) mkdirPrivate(name string, exclusive bool) (*dirHandle, error) {
	err := unix.Mkdirat(d.fd, name, 0o700)
	if err != nil && (exclusive || !errors.Is(err, unix.EEXIST)) {
		return nil, &os.PathError{Op: "mkdir", Path: d.sub(name), Err: err}
	}
	return d.openPrivate(name)
}

// openPrivate opens the directory name in d, refusing a symlink, and checks
// that it is ours: a directory owned by our effective uid, mode 0700.
func (d *dirHandle) openPrivate(name string) (*dirHandle, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.sub(name), Err: err}
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	switch {
	case err != nil:
	case uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR:
		err = errors.New("not a directory")
	case int(st.Uid) != os.Geteuid():
		err = fmt.Errorf("owned by uid %d, not by us", st.Uid)
	case uint32(st.Mode)&0o7777 != 0o700:
		err = unix.Fchmod(fd, 0o700) // a umask can only have taken bits away
	}
	if err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "check", Path: d.sub(name), Err: err}
	}
	return &dirHandle{fd: fd, path: d.sub(name)}, nil
}

// create makes a new 0600 file name in d, open for writing; it fails if
// anything, a symlink included, is already there.
func (d *dirHandle) create(name string) (*os.File, error) {
	return d.openNew(name, unix.O_WRONLY)
}

// createUnlinked makes a 0600 file in d, open for reading and writing, and
// removes its name at once.
func (d *dirHandle) createUnlinked(name string) (*os.File, error) {
	f, err := d.openNew(name, unix.O_RDWR)
	if err == nil {
		_ = d.unlink(name)
	}
	return f, err
}

func (d *dirHandle) openNew(name string, mode int) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, mode|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: d.sub(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.sub(name)), nil
}

// unlink removes the file name from d.
func (d *dirHandle) unlink(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: d.sub(name), Err: err}
	}
	return nil
}

// atPath reports whether d's path still names d itself: not a directory
// put in its place, nor one reached through a symlink that replaced d or a
// directory above it.
func (d *dirHandle) atPath() bool {
	var at, own unix.Stat_t
	if unix.Fstat(d.fd, &own) != nil || unix.Lstat(d.path, &at) != nil {
		return false
	}
	return uint64(at.Dev) == uint64(own.Dev) && uint64(at.Ino) == uint64(own.Ino)
}

// removeChild removes child, which was opened as name in d, once it is
// empty: only if name still is that very directory (not a symlink or another
// directory put in its place).
func (d *dirHandle) removeChild(name string, child *dirHandle) error {
	var at, own unix.Stat_t
	if err := unix.Fstat(child.fd, &own); err != nil {
		return &os.PathError{Op: "stat", Path: child.path, Err: err}
	}
	err := unix.Fstatat(d.fd, name, &at, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && (uint64(at.Dev) != uint64(own.Dev) || uint64(at.Ino) != uint64(own.Ino)) {
		err = errors.New("something else took its place; left alone")
	}
	if err == nil {
		err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: child.path, Err: err}
	}
	return nil
}

// entries lists d through its descriptor.
func (d *dirHandle) entries() ([]os.DirEntry, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.ReadDir(-1)
}

// clear removes every entry of d that is not a directory (files someone
// else put in our directory); it does not descend.
func (d *dirHandle) clear() error {
	entries, err := d.entries()
	for _, ent := range entries {
		if !ent.IsDir() {
			err = errors.Join(err, d.unlink(ent.Name()))
		}
	}
	return err
}

// sub is the path of name in d.
func (d *dirHandle) sub(name string) string { return filepath.Join(d.path, name) }

func (d *dirHandle) close() {
	if d != nil && d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}
