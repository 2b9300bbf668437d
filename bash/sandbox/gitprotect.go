package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Bounds of the search for repositories in a workspace at a jail's start.
const (
	repoSearchDepth   = 4     // directory levels below the workspace
	repoSearchEntries = 20000 // directory entries read, at most
)

// skipDirs are not searched for repositories: big, and made by tools.
var skipDirs = map[string]bool{"node_modules": true, ".venv": true, "target": true, "__pycache__": true}

// WorkspaceReadOnly returns the paths in a workspace, relative to it, that
// are read-only in every jail where they exist (a new slice each time):
// what a host program runs or trusts later (editors' tasks and settings,
// direnv, agents' and dsh-bash's own project rules). A jail must never
// widen what the user trusts.
func WorkspaceReadOnly() []string { return slices.Clone(workspaceReadOnly) }

// workspaceReadOnly are WorkspaceReadOnly.
var workspaceReadOnly = []string{".dsh", ".vscode", ".idea", ".envrc", ".claude", ".mcp.json", ".cursor", ".zed"}

// gitReadOnly are the entries of a git directory that make git run code or
// read its configuration elsewhere: read-only in every jail. Those missing
// at a jail's start but config are made first, as placeholders the jail
// holds for its life (see gitHolds), since a command could otherwise
// create them.
var gitReadOnly = []string{"config", "config.worktree", "hooks", "commondir", "info/attributes"}

// protected lists what a jail of workspace binds to keep host programs'
// code and configuration out of the commands' reach: mounts, the git
// directories bound onto themselves (so that a command can neither rename
// nor replace one: a mount point is busy), and readOnly, the files and
// directories bound read-only. A .git that is a file (a worktree's or
// submodule's pointer to its git directory) is read-only itself. With
// prepare set, each git directory is handed to it before its entries are
// listed (a jail's start makes the missing ones, see gitHolds; a view of
// the policy changes nothing).
func protected(workspace string, prepare func(gitDir string)) (mounts, readOnly []string) {
	for _, rel := range workspaceReadOnly {
		readOnly = append(readOnly, filepath.Join(workspace, rel))
	}
	for _, dotgit := range findRepos(workspace) {
		fi, err := os.Lstat(dotgit)
		switch {
		case err != nil:
		case fi.Mode().IsRegular():
			readOnly = append(readOnly, dotgit)
		case fi.IsDir():
			mounts = append(mounts, dotgit)
			for _, gd := range gitDirs(dotgit) {
				if prepare != nil {
					prepare(gd)
				}
				for _, name := range gitReadOnly {
					readOnly = append(readOnly, filepath.Join(gd, name))
				}
			}
		}
	}
	return mounts, readOnly
}

// findRepos finds the .git entries in workspace and below it, within the
// search bounds; symbolic links are not followed.
func findRepos(workspace string) []string {
	var found []string
	entries := 0
	_ = filepath.WalkDir(workspace, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if entries++; entries > repoSearchEntries {
			return filepath.SkipAll
		}
		if d.Name() == ".git" {
			found = append(found, path)
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() && path != workspace && (skipDirs[d.Name()] || depth(workspace, path) > repoSearchDepth) {
			return filepath.SkipDir
		}
		return nil
	})
	return found
}

// depth is how many levels path lies below root.
func depth(root, path string) int {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." {
		return 0
	}
	return strings.Count(rel, string(filepath.Separator)) + 1
}

// gitDirs are a .git directory and the git directories inside it: its
// submodules' (modules/…, nested as deep as they go) and its linked
// worktrees' (worktrees/NAME).
func gitDirs(dotgit string) []string {
	dirs := []string{dotgit}
	for _, sub := range []string{"modules", "worktrees"} {
		_ = filepath.WalkDir(filepath.Join(dotgit, sub), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if _, err := os.Lstat(filepath.Join(path, "HEAD")); err == nil {
				dirs = append(dirs, path)
			}
			switch d.Name() {
			case "objects", "refs", "logs":
				return filepath.SkipDir
			}
			return nil
		})
	}
	return dirs
}
