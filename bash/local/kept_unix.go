//go:build unix

package local

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"syscall"
	"time"
)

// keptSpillName is the name of a directory of kept spill files
// (Options.KeepSpillFiles; see spillDirName).
var keptSpillName = regexp.MustCompile(`^dsh-spill-kept-[0-9a-f]{16}$`)

// CleanKept removes the directories of kept spill files
// (Options.KeepSpillFiles) in spillParent ("" means os.TempDir()) that
// nothing has been written to for olderThan: a program that keeps them
// (a one-shot CLI that prints their paths) calls it when it starts, so
// that they do not pile up. Only this user's directories are touched,
// through open directory descriptors as Close does. It returns the
// directories it removed.
func CleanKept(spillParent string, olderThan time.Duration) (removed []string, err error) {
	if spillParent == "" {
		spillParent = os.TempDir()
	}
	return removeSpillDirs(spillParent, func(top *dirHandle, ent os.DirEntry) bool {
		if !keptSpillName.MatchString(ent.Name()) || !ownedByUs(ent) {
			return false
		}
		last, err := lastWritten(top, ent)
		return err == nil && time.Since(last) >= olderThan // else being made, or used: not ours to judge
	})
}

// removeSpillDirs removes the spill directories in parent that remove
// picks, through open directory descriptors as Close does, and returns
// the ones it removed.
func removeSpillDirs(parent string, remove func(top *dirHandle, ent os.DirEntry) bool) ([]string, error) {
	top, err := openDirPath(parent)
	if err != nil {
		return nil, fmt.Errorf("open the spill parent: %w", err)
	}
	defer top.close()
	entries, err := top.entries()
	if err != nil {
		return nil, fmt.Errorf("list the spill parent: %w", err)
	}
	var removed []string
	var errs []error
	for _, ent := range entries {
		if !ent.IsDir() || !remove(top, ent) {
			continue
		}
		if err := removeSpillTree(top, ent.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, top.sub(ent.Name()))
	}
	return removed, errors.Join(errs...)
}

// lastWritten is when the spill directory ent of top, its owner
// directories or their files last changed.
func lastWritten(top *dirHandle, ent os.DirEntry) (time.Time, error) {
	last, err := modTime(ent)
	if err != nil {
		return last, err
	}
	root, err := top.openPrivate(ent.Name())
	if err != nil {
		return last, err
	}
	defer root.close()
	owners, err := root.entries()
	for _, od := range owners {
		last = later(last, od)
		if !od.IsDir() {
			continue
		}
		d, err := root.openPrivate(od.Name())
		if err != nil {
			continue
		}
		files, _ := d.entries()
		for _, f := range files {
			last = later(last, f)
		}
		d.close()
	}
	return last, err
}

// modTime is ent's modification time.
func modTime(ent os.DirEntry) (time.Time, error) {
	fi, err := ent.Info()
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// later is the later of t and ent's modification time.
func later(t time.Time, ent os.DirEntry) time.Time {
	if m, err := modTime(ent); err == nil && m.After(t) {
		return m
	}
	return t
}

// removeSpillTree removes a spill directory of ours (mode 0700, our uid, not
// a symlink: else it is left alone) with its owner directories and files,
// through open directories.
func removeSpillTree(top *dirHandle, name string) error {
	root, err := top.openPrivate(name)
	if err != nil {
		return err
	}
	defer root.close()
	entries, err := root.entries()
	errs := []error{err}
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		od, err := root.openPrivate(ent.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, od.clear(), root.removeChild(ent.Name(), od))
		od.close()
	}
	errs = append(errs, root.clear(), top.removeChild(name, root))
	return errors.Join(errs...)
}

// ownedByUs reports whether ent belongs to this process's effective user:
// another user's executor cgroup (an unprivileged dsh-bash started from a
// root one's cgroup sees root's) or kept spill directory is not ours to
// remove, and trying would only print a permission error at every start.
func ownedByUs(ent os.DirEntry) bool {
	fi, err := ent.Info()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
