package permission

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// writeOps are the redirections that write to their word (>& too, when
// its word is a file name rather than a descriptor).
var writeOps = map[syntax.RedirOperator]bool{
	syntax.RdrOut: true, syntax.AppOut: true, syntax.RdrInOut: true, syntax.RdrClob: true,
	syntax.RdrAll: true, syntax.AppAll: true, syntax.RdrAllClob: true, syntax.AppAllClob: true,
}

// harmlessTargets can be written anywhere.
var harmlessTargets = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/tty": true}

// redirect asks about a write outside the workspace, and a connection
// through bash's /dev/tcp and /dev/udp.
func (c *checker) redirect(r *syntax.Redirect) {
	if r.Word == nil || r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc {
		return
	}
	if mayConnect(r.Word, c.p.Home) {
		c.unknowable("< "+wordText(r.Word), "it may open a network connection (bash's /dev/tcp or /dev/udp)")
		return
	}
	if !writeOps[r.Op] && r.Op != syntax.DplOut {
		return
	}
	target, ok := staticWord(r.Word, c.p.Home)
	if r.Op == syntax.DplOut && ok && isFD(target) {
		return
	}
	c.writes(target, ok)
}

// writes asks about a write to target (static says whether its name is
// known) outside the workspace.
func (c *checker) writes(target string, static bool) {
	if c.workspace == "" {
		return
	}
	if !static {
		c.unknowable("> …", "it writes to a file whose name is only known when it runs")
		return
	}
	raw := target // as the kernel reads it: a link before .. is followed first
	if filepath.IsAbs(target) {
		target = filepath.Clean(target)
	}
	if harmlessTargets[target] || strings.HasPrefix(target, "/dev/fd/") {
		return
	}
	if !filepath.IsAbs(target) {
		if c.changesDir || c.workdir == "" {
			c.unknowable("> "+target, fmt.Sprintf("it writes to %s relative to a directory it changes", target))
			return
		}
		c.relativeWrite = true
		raw = c.workdir + "/" + target
		target = filepath.Join(c.workdir, target)
	}
	if !within(target, c.workspace) {
		c.unknowable("> "+target, fmt.Sprintf("it writes to %s, outside the workspace %s", target, c.workspace))
		return
	}
	if inGitDir(target) || inGitDir(resolveLinks(target)) {
		c.unknowable("> "+target, fmt.Sprintf("it writes to %s, in a .git directory, where git reads the programs it runs (config, hooks): not an ordinary workspace write", target))
		return
	}
	// The shell opens what links on the way name, as they are now (the
	// sandbox, not this check, holds against a link changed meanwhile).
	if real := resolveLinks(raw); !within(real, resolveLinks(c.workspace)) {
		c.unknowable("> "+target, fmt.Sprintf("it writes to %s, a link to %s, outside the workspace %s", target, real, c.workspace))
	}
}

// inGitDir reports whether the path p is in a .git directory (or is a
// .git file, which names one): git reads there the programs it runs
// (core.pager, diff.external, hooks) and what HEAD and the refs are.
func inGitDir(p string) bool {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if strings.EqualFold(part, ".git") {
			return true
		}
	}
	return false
}

// gitDirOperand asks about a command, other than git and one the tables
// know to only read, that names a file in a .git directory (cp x
// .git/hooks/pre-commit, tee -a .git/config): it may write there (see
// inGitDir).
func (c *checker) gitDirOperand(base string, args []string, known int) {
	if base == "git" || readOnly(args, known) {
		return
	}
	for _, a := range args[1:known] {
		if _, v, ok := strings.Cut(a, "="); ok && inGitDir(v) || inGitDir(a) {
			c.unknowable(commandText(args, known), fmt.Sprintf("%s names %s, in a .git directory, where git reads the programs it runs (config, hooks)", base, a))
			return
		}
	}
}

// resolveLinks is the clean absolute path p names once the symbolic links
// on its way, the last one too (even one whose target does not exist),
// are followed, as the kernel does: in order, so that .. after a link
// is the parent of where the link leads (ext/../x, with ext a link to
// /elsewhere/dir, is /elsewhere/x). What does not exist is kept as
// written.
func resolveLinks(p string) string {
	done, rest := "/", strings.Split(p, "/")
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, name)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || hops > 40 {
			done = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			done = next
			continue
		}
		hops++
		if filepath.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return done
}

// mayConnect reports whether a redirection's word is, or may be once
// expanded, bash's /dev/tcp/HOST/PORT or /dev/udp/HOST/PORT: its static
// start does not rule it out.
func mayConnect(w *syntax.Word, home string) bool {
	prefix, whole := staticPrefix(w, home)
	if whole {
		return strings.HasPrefix(prefix, "/dev/tcp/") || strings.HasPrefix(prefix, "/dev/udp/")
	}
	for _, dev := range []string{"/dev/tcp/", "/dev/udp/"} {
		if strings.HasPrefix(prefix, dev) || strings.HasPrefix(dev, prefix) {
			return true
		}
	}
	return false
}

// wordText is a word as written.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, w)
	return b.String()
}

// isFD reports whether a >& word is a descriptor (2, 3-) or - (close).
func isFD(s string) bool { return fdRE.MatchString(s) }

// fdRE matches the word of >& that is a descriptor, not a file.
var fdRE = regexp.MustCompile(`^([0-9]+-?|-)$`)

// within reports whether the clean path p is dir or under it.
func within(p, dir string) bool {
	dir = filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// inWorkspace reports whether dir (relative to the workdir) is in the
// workspace.
func (c *checker) inWorkspace(dir string) bool {
	if c.workspace == "" || c.changesDir {
		return false
	}
	if !filepath.IsAbs(dir) {
		dir = c.workdir + "/" + dir
	}
	return within(filepath.Clean(dir), c.workspace) && within(resolveLinks(dir), resolveLinks(c.workspace))
}

// changesDir reports whether a script changes its directory anywhere (cd,
// pushd, popd; env -C, sudo -D, find -execdir): relative writes are then
// somewhere else, whatever the order the walk meets them in (a function,
// a loop or a trap may run a write after a cd that comes later in the
// text). A cd it does not see here (builtin cd, eval cd) is met in the
// walk: see dirChanged.
func changesDir(f *syntax.File, home string) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			found = found || dirCall(argv(call.Args, home))
		}
		return !found
	})
	return found
}

// dirCall reports whether a simple command changes the directory of the
// shell, or of what it runs.
func dirCall(args []string, known int) bool {
	if known == 0 {
		return false // a name only known when it runs is asked about
	}
	switch path.Base(args[0]) {
	case "cd", "pushd", "popd":
		return true
	case "env":
		return optionOf(wrappers["env"], args, known, "-C", "--chdir")
	case "sudo":
		return optionOf(wrappers["sudo"], args, known, "-D", "--chdir")
	case "find":
		return slices.Contains(args, "-execdir") || slices.Contains(args, "-okdir")
	}
	return false
}

// optionOf reports whether a wrapper's options (up to its command) have
// one of opts, in any spelling (env -iC DIR, --ch=DIR); an option only
// known when it runs may be one.
func optionOf(w wrapper, args []string, known int, opts ...string) bool {
	for i := 1; i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--"; i++ {
		if i >= known {
			return true
		}
		opt, _, used, _, _ := w.option(args, i)
		if slices.Contains(opts, opt) || isShortCluster(args[i]) && strings.ContainsAny(args[i], "CD") {
			return true
		}
		i += used - 1
	}
	return false
}

// child checks a string another shell runs (bash -c, watch, flock -c):
// a cd in it moves that shell only, not the one whose later writes are
// checked; a relative write in it, like one of this shell, may run after
// a cd of this shell.
func (c *checker) child(check func()) {
	changesDir, relativeWrite := c.changesDir, c.relativeWrite
	c.relativeWrite = false
	check()
	c.changesDir, c.relativeWrite = changesDir, relativeWrite || c.relativeWrite
}

// dirChanged notes that the directory changes; a relative write read
// before as in the workdir may run after it (the cd was in a string run
// by eval or a trap, which the scan of the text did not see): that is
// asked about.
func (c *checker) dirChanged() {
	if !c.changesDir && c.relativeWrite {
		c.unknowable("cd …", "it changes directory where a relative write it has may run after")
	}
	c.changesDir = true
}
