//go:build linux

package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dshgo/dsh/internal/stamp"
)

// The names of the directories an executor makes, stamped with the pid and
// start time of its process (see selfStamp).
var (
	staleCgroupName = regexp.MustCompile(`^dsh-([0-9]+)-([0-9]+)-[0-9a-f]{8}$`)
	staleSpillName  = regexp.MustCompile(`^dsh-spill-([0-9]+)-([0-9]+)-[0-9a-f]{8}$`)
)

// CleanStale removes what executors left when their process died without
// Close (SIGKILL, a crash): their cgroups under this process's own, once
// the processes still in them are killed (cgroup.kill) and gone, and their
// spill directories in spillParent ("" means os.TempDir(), the default of
// Options.SpillDir). It returns the directories it removed; ctx bounds the
// wait for killed processes. Call it when a program that embeds an
// executor starts.
//
// Only a directory stamped dsh-PID-START-… or dsh-spill-PID-START-… with
// a process that no longer exists (in this pid namespace) is stale, so a
// live executor's is never touched, even where a dead one's pid was
// reused. Kept spill files (Options.KeepSpillFiles), unstamped directories
// and other users' are left alone. Spill directories are removed through
// open directory descriptors, as Close removes them.
func CleanStale(ctx context.Context, spillParent string) (removed []string, err error) {
	home, herr := ownCgroupHome()
	if herr == nil {
		removed, err = cleanStaleCgroups(ctx, home.dir)
	}
	if spillParent == "" {
		spillParent = os.TempDir()
	}
	spills, serr := cleanStaleSpills(spillParent)
	return append(removed, spills...), errors.Join(err, serr)
}

// staleMatch reports whether name matches re and names a dead process.
func staleMatch(re *regexp.Regexp, name string) bool { return stamp.Stale(re, name) }

// cleanStaleCgroups kills and removes the stale executor cgroups in parent.
func cleanStaleCgroups(ctx context.Context, parent string) ([]string, error) {
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		// Our cgroup is not in this mount namespace's view (a dsh-bash run
		// inside another's jail): nothing of ours can be there.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list cgroups: %w", err)
	}
	var removed []string
	var errs []error
	for _, ent := range entries {
		if !ent.IsDir() || !staleMatch(staleCgroupName, ent.Name()) || !ownedByUs(ent) {
			continue
		}
		dir := filepath.Join(parent, ent.Name())
		if err := killCgroup(ctx, dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := removeCgroupTree(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// killCgroup kills every process in the cgroup dir and its descendants and
// waits until its cgroup.events says none is left.
func killCgroup(ctx context.Context, dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("kill the stale cgroup %s: %w", dir, err)
	}
	if err := waitUnpopulated(ctx, dir); err != nil {
		return fmt.Errorf("wait for the stale cgroup %s to empty: %w", dir, err)
	}
	return nil
}

// waitUnpopulated waits, with inotify, until cgroup.events in dir reads
// "populated 0", or ctx is done.
func waitUnpopulated(ctx context.Context, dir string) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	events := filepath.Join(dir, "cgroup.events")
	if _, err := unix.InotifyAddWatch(fd, events, unix.IN_MODIFY); err != nil {
		return err
	}
	// A deadline in the past wakes the read when ctx ends.
	defer context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })()
	buf := make([]byte, 4096)
	for {
		b, err := os.ReadFile(events)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("populated 0")) {
			return nil
		}
		if _, err := f.Read(buf); err != nil {
			return errors.Join(context.Cause(ctx), err)
		}
	}
}

// cleanStaleSpills removes the stale spill directories in parent.
func cleanStaleSpills(parent string) ([]string, error) {
	return removeSpillDirs(parent, func(_ *dirHandle, ent os.DirEntry) bool {
		return staleMatch(staleSpillName, ent.Name())
	})
}
