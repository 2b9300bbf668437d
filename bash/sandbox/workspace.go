package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/dshgo/dsh/bash"
)

// The names of the directories an executor keeps for itself in its
// temporary directories: the jails' private /tmp directories (see
// jailsPrefix) and the spill files (package local).
var serverDirPrefixes = []string{"dsh-jails-", "dsh-spill-"}

// checkWorkspace refuses a workspace that commands, which may change it,
// must not have: the home directory or one that holds it (the root does),
// one that holds the temporary directories the executor keeps its
// sessions' private files in, or one inside such files (any executor's).
func checkWorkspace(ws, home string, tempDirs []string) error {
	ws = realPath(ws)
	if home = realPath(home); home != "" && within(home, ws) {
		return &bash.WorkspaceError{Path: ws, Holds: home, Problem: bash.ErrWorkspaceHome}
	}
	for _, dir := range tempDirs {
		dir = realPath(dir)
		if dir == "" {
			continue
		}
		if within(dir, ws) {
			return &bash.WorkspaceError{Path: ws, Holds: dir, Problem: bash.ErrWorkspaceServer}
		}
		if rel, err := filepath.Rel(dir, ws); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			top := strings.Split(rel, string(filepath.Separator))[0]
			for _, p := range serverDirPrefixes {
				if strings.HasPrefix(top, p) {
					return &bash.WorkspaceError{Path: ws, Holds: filepath.Join(dir, top), Problem: bash.ErrWorkspaceServer}
				}
			}
		}
	}
	return nil
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "..")
}

// realPath is path with its symbolic links resolved, as a bind mount sees
// it; cleaned as it is where it cannot be resolved; "" stays "".
func realPath(path string) string {
	if path == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// tempDirOr is dir, or the system's temporary directory when dir is "".
func tempDirOr(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	return dir
}
