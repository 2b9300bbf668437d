//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/dshgo/dsh/internal/stamp"
)

// staleJailsName is the name of a jails' directory, which holds the
// temporary directories of the Landlock layer's sessions (a jail's /tmp is
// a file system in memory): dsh-jails-PID-START-RANDOM, stamped with its
// maker. Its stamp names the executor's cgroup v1 directories too
// (dsh-limits-…, see newLimiter).
var staleJailsName = regexp.MustCompile(`^dsh-jails-([0-9]+)-([0-9]+)-[0-9]+$`)

// jailsPrefix is the name pattern of this process's jails' directory.
func jailsPrefix() string {
	if s := stamp.Self(); s != "" {
		return "dsh-jails-" + s + "-"
	}
	return "dsh-jails-" // unstamped: never taken for stale
}

// CleanStale removes what sandbox executors left when their process died
// without Close: their jails' directories in tempDir ("" means
// os.TempDir(), the default of Options.TempDir) and their limits' cgroup
// v1 directories, where stamped with a process that is gone and owned by
// this user. It returns the directories it removed. Call it, with
// local.CleanStale (which cleans up the rest), when a program that embeds
// a sandbox executor starts; jails themselves die with their executor's
// process (bwrap --die-with-parent).
func CleanStale(ctx context.Context, tempDir string) (removed []string, err error) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	entries, err := os.ReadDir(tempDir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", tempDir, err)
	}
	var errs []error
	for _, ent := range entries {
		if ctx.Err() != nil {
			return removed, errors.Join(append(errs, ctx.Err())...)
		}
		if !ent.IsDir() || !stamp.Stale(staleJailsName, ent.Name()) {
			continue
		}
		dir := filepath.Join(tempDir, ent.Name())
		if !ownDir(dir) {
			continue
		}
		if err := removeTree(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove the stale %s: %w", dir, err))
			continue
		}
		removed = append(removed, dir)
	}
	cgs, cerr := cleanStaleLimits()
	return append(removed, cgs...), errors.Join(append(errs, cerr)...)
}

// staleLimitsName is the name of an executor's directory in a cgroup v1
// hierarchy (see newLimiter): dsh-limits-PID-START-RANDOM.
var staleLimitsName = regexp.MustCompile(`^dsh-limits-([0-9]+)-([0-9]+)-[0-9]+$`)

// cleanStaleLimits removes the cgroup v1 directories of executors that
// are gone, with their jails' (which their jails, gone with them, left
// empty).
func cleanStaleLimits() ([]string, error) {
	mounts, own, err := cgroupFiles("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, ctl := range controllers {
		parent, err := v1Dir(mounts, own, ctl.name)
		if err != nil {
			continue // no such hierarchy: nothing was made there
		}
		entries, _ := os.ReadDir(parent)
		for _, ent := range entries {
			if !ent.IsDir() || !stamp.Stale(staleLimitsName, ent.Name()) || !ownDir(filepath.Join(parent, ent.Name())) {
				continue
			}
			dir := filepath.Join(parent, ent.Name())
			if err := removeCgroupTree(dir); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, dir)
		}
	}
	return removed, errors.Join(errs...)
}

// removeCgroupTree removes the empty cgroup dir and those below it,
// deepest first: its jails', and what a server run in one of them made
// there.
func removeCgroupTree(dir string) error {
	var errs []error
	subs, _ := os.ReadDir(dir)
	for _, sub := range subs {
		if sub.IsDir() {
			errs = append(errs, removeCgroupTree(filepath.Join(dir, sub.Name())))
		}
	}
	return errors.Join(append(errs, jailCgroups{dir}.remove())...)
}

// ownDir reports whether path is a directory (not a symlink) of this user.
func ownDir(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
