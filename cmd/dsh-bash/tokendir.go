package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/dshgo/dsh/internal/stamp"
)

// staleTokenDir is the name of a generated token's directory, stamped with
// the process that made it: dsh-bash-token-PID-START-RANDOM.
var staleTokenDir = regexp.MustCompile(`^dsh-bash-token-([0-9]+)-([0-9]+)-[0-9]+$`)

// tokenDirPrefix is the name of this process's token directory, up to
// the random part os.MkdirTemp adds. Where /proc cannot tell the stamp, the
// name has none, and the directory is never taken for stale.
func tokenDirPrefix() string {
	if s := stamp.Self(); s != "" {
		return "dsh-bash-token-" + s + "-"
	}
	return "dsh-bash-token-"
}

// cleanStaleTokenDirs removes the token directories in tempDir ("": the
// system's) of dsh-bash processes that are gone (killed before they could
// remove them): only this user's real directories, never a symlink.
func cleanStaleTokenDirs(tempDir string) (removed []string, err error) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	entries, err := os.ReadDir(tempDir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", tempDir, err)
	}
	var errs []error
	for _, ent := range entries {
		dir := filepath.Join(tempDir, ent.Name())
		if !ent.IsDir() || !stamp.Stale(staleTokenDir, ent.Name()) || !ownRealDir(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove the stale %s: %w", dir, err))
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// ownRealDir reports whether path is a directory (not a symlink to one) of
// this process's effective user.
func ownRealDir(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
