package sandbox

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// gitNote tells the model, once a command has ended, of a git directory
// the jail protects that has lost what made it a repository (a command
// removed it): its config and hooks, bound read-only, stay, and git init
// fails there ("Device or resource busy"), in this session and the next.
// It says so after the command that removed it, and after each one that
// failed while it is gone; else "".
func (j *jail) gitNote(failed bool) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.git == nil {
		return ""
	}
	var gone []string
	for _, d := range j.git.dirs {
		if len(present(d.fd, d.had)) == len(d.had) {
			delete(j.gitLost, d.path)
			continue
		}
		if failed || !j.gitLost[d.path] {
			gone = append(gone, d.path)
		}
		if j.gitLost == nil {
			j.gitLost = map[string]bool{}
		}
		j.gitLost[d.path] = true
	}
	if len(gone) == 0 {
		return ""
	}
	return fmt.Sprintf("%s is no longer a git repository, and git init cannot make it one in the sandbox: its config and hooks are the user's "+
		"and stay read-only here (\"Device or resource busy\"); ask the user to restore it, or to run git init outside the sandbox", strings.Join(gone, ", "))
}

// repoEntries are what git looks for in a directory to take it for a git
// directory (a linked worktree's finds objects and refs in its common one).
var repoEntries = []string{"HEAD", "objects", "refs"}

// present are those of names that directory dir holds.
func present(dir int, names []string) []string {
	var out []string
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			out = append(out, name)
		}
	}
	return out
}
