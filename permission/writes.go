package permission

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
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

// redirect asks about a write outside the workspace.
func (c *checker) redirect(r *syntax.Redirect) {
	if !writeOps[r.Op] && r.Op != syntax.DplOut || r.Word == nil {
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
		target = filepath.Join(c.workdir, target)
	}
	if !within(target, c.workspace) {
		c.unknowable("> "+target, fmt.Sprintf("it writes to %s, outside the workspace %s", target, c.workspace))
	}
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
		dir = filepath.Join(c.workdir, dir)
	}
	return within(filepath.Clean(dir), c.workspace)
}

// changesDir reports whether a script changes its directory anywhere (cd,
// pushd, popd, env -C): relative writes are then somewhere else, whatever
// the order the walk meets them in.
func changesDir(f *syntax.File, home string) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || found {
			return !found
		}
		args, known := argv(call.Args, home)
		if known == 0 {
			return true
		}
		switch path.Base(args[0]) {
		case "cd", "pushd", "popd":
			found = true
		case "env":
			for _, a := range args[1:] {
				found = found || a == "-C" || strings.HasPrefix(a, "-C") || strings.HasPrefix(a, "--ch")
			}
		}
		return !found
	})
	return found
}
