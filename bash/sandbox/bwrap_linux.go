package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// jailPaths are the per-jail paths bwrapArgs binds.
type jailPaths struct {
	workspace string // bound read-write at its own path
	tmpSize   int64  // the size of the jail's private /tmp (and its covers); ≤ 0: the kernel's default
	spill     string // the owner's spill directory, bound read-only at its own path
	// serverTemp are the executor's temporary directories (where the jails'
	// /tmp, the spill files and dsh-bash's token are kept): the private
	// /tmp is bound over each, hiding every session's files there.
	serverTemp []string
	// env is the commands' environment, whose cache variables name more
	// writable directories (see cacheEnv).
	env []string
	// deny are the deny rules the jail's agent enforces at every exec
	// (SpawnRequest.ExecRules of the request that starts the jail).
	deny []string
	// systemHidden are the hidden system paths with their links
	// resolved, once per executor (nil: resolved here; see
	// systemHiddenIn).
	systemHidden []string
}

// Descriptors bwrap inherits (exec.Cmd.ExtraFiles, in this order).
const (
	fdAgentSock = 3
	fdAgentExe  = 4
	fdSeccomp   = 5
)

// bwrapArgs is bwrap's command line for one jail: its own user, pid, ipc
// and uts namespaces (and network namespace, unless the network is on), no
// capability, user namespaces disabled inside, the host's root read-only
// with the policy's paths bound over it, and the agent as pid 1.
//
// prepare gets each git directory in the workspace before its entries are
// listed (see protected).
func (p *Policy) bwrapArgs(jp jailPaths, prepare func(gitDir string)) []string {
	a := p.rootArgs(jp)
	writable := p.writable(jp)
	a = append(a, bindArgs("--bind", writable)...)
	mounts, readOnly := protected(jp.workspace, prepare)
	a = append(a, bindArgs("--bind", mounts)...)
	a = append(a, bindArgs("--ro-bind", append(readOnly, p.ReadOnly...))...)
	if jp.spill != "" {
		a = append(a, "--ro-bind", jp.spill, jp.spill)
	}
	again := jp.systemHiddenIn(slices.Concat(writable, p.ReadOnly))
	a = append(a, mountArgs(p.hideOps(append(again, p.hiddenLast()...)))...)
	return append(a, "--chdir", jp.workspace, "--seccomp", strconv.Itoa(fdSeccomp))
}

// systemHiddenIn are the hidden system paths that lie within one of
// binds (not those that hold one): a bind made after rootArgs hid them
// shows them again (a workspace of /etc, its /etc/shadow), so they are
// hidden again after it. One that holds a bind (a workspace in /run)
// stays hidden around it.
func (jp jailPaths) systemHiddenIn(binds []string) []string {
	real := realPaths(binds)
	hidden := jp.systemHidden
	if hidden == nil {
		hidden = realPaths(hiddenSystemPaths)
	}
	var in []string
	for i, rh := range hidden {
		for _, rb := range real {
			if rh != rb && within(rh, rb) {
				in = append(in, hiddenSystemPaths[i])
				break
			}
		}
	}
	return in
}

// rootArgs are the options and mounts of every jail before its writable
// paths: the namespaces, the host's root read-only, /dev, /proc, the
// hidden system paths and the private /tmp with its covers.
func (p *Policy) rootArgs(jp jailPaths) []string {
	a := []string{
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--disable-userns", "--cap-drop", "ALL", "--die-with-parent",
		"--as-pid-1", "--new-session", "--hostname", "dsh-sandbox",
	}
	if p.Network != NetworkOn {
		a = append(a, "--unshare-net")
	}
	a = append(a, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	a = append(a, mountArgs(p.hideOps(hiddenSystemPaths))...)
	a = append(a, tmpfsArgs("/tmp", 0o1777, jp.tmpSize)...)
	for _, dir := range p.tempCovers(jp.serverTemp) {
		a = append(a, tmpfsArgs(dir, 0o700, jp.tmpSize)...)
	}
	return a
}

// poolArgs is bwrap's command line for a jail of the warm pool: a jail's
// (bwrapArgs) without anything of a session's (jp has no workspace and no
// spill directory), which sessionMounts adds when one claims it.
func (p *Policy) poolArgs(jp jailPaths) []string {
	a := p.rootArgs(jp)
	writable := p.writable(jp)[1:]
	a = append(a, bindArgs("--bind", writable)...)
	a = append(a, bindArgs("--ro-bind", p.ReadOnly)...)
	again := jp.systemHiddenIn(slices.Concat(writable, p.ReadOnly))
	a = append(a, mountArgs(p.hideOps(append(again, p.hiddenLast()...)))...)
	return append(a, "--chdir", "/", "--seccomp", strconv.Itoa(fdSeccomp))
}

// sessionMounts are the mounts a pooled jail (poolArgs) gets when a session
// claims it, so that it is the jail bwrapArgs makes: the workspace, the git
// directories in it, what stays read-only there, the spill directory, and
// then again each of the policy's read-only and hidden paths that lies in
// the workspace, or holds it, which poolArgs made before the workspace was
// there (bwrapArgs makes them after). A path that does not exist is left
// out, as bwrapArgs leaves it out. prepare is bwrapArgs'.
func (p *Policy) sessionMounts(jp jailPaths, prepare func(gitDir string)) []mountOp {
	ops := bindOps(mountBind, []string{jp.workspace})
	mounts, readOnly := protected(jp.workspace, prepare)
	ops = append(ops, bindOps(mountBind, mounts)...)
	ro := append(readOnly, overlapping(p.ReadOnly, jp.workspace)...)
	ops = append(ops, bindOps(mountReadOnly, ro)...)
	if jp.spill != "" {
		ops = append(ops, mountOp{mountReadOnly, jp.spill})
	}
	hide := jp.systemHiddenIn(append([]string{jp.workspace}, ro...))
	for _, h := range p.hiddenLast() {
		if overlaps(h, jp.workspace) {
			hide = append(hide, h)
		}
	}
	return append(ops, p.hideOps(hide)...)
}

// realPaths are paths with their links resolved (see realPath).
func realPaths(paths []string) []string {
	real := make([]string, len(paths))
	for i, p := range paths {
		real[i] = realPath(p)
	}
	return real
}

// bindOps bind each existing path onto itself (as bindArgs).
func bindOps(kind mountKind, paths []string) []mountOp {
	var ops []mountOp
	for _, path := range paths {
		if _, err := os.Stat(path); err == nil {
			ops = append(ops, mountOp{kind, path})
		}
	}
	return ops
}

// overlapping are those of paths that lie in dir or hold it.
func overlapping(paths []string, dir string) []string {
	var out []string
	for _, p := range paths {
		if overlaps(p, dir) {
			out = append(out, p)
		}
	}
	return out
}

// overlaps reports whether a lies in b or holds it, their links resolved.
func overlaps(a, b string) bool {
	a, b = realPath(a), realPath(b)
	return within(a, b) || within(b, a)
}

// hiddenLast are the hidden paths a jail covers after its writable ones:
// the credentials in the home directory and the policy's.
func (p *Policy) hiddenLast() []string {
	return append(inHome(p.home(), hiddenHomePaths), p.Hidden...)
}

// tempCovers are the temporary directories the jail's private /tmp is also
// bound over: each of dirs but /tmp itself (covered already), and any that
// holds the home directory (whose caches and tools jails need). A
// $TMPDIR outside /tmp thus names the private /tmp in the jail, where the
// server's files and other sessions' are out of sight, and one under /tmp
// (which the private /tmp would lack) exists there.
func (p *Policy) tempCovers(dirs []string) []string {
	home := realPath(p.home())
	var out []string
	for _, dir := range dirs {
		dir = realPath(dir)
		if dir == "" || dir == "/tmp" || slices.Contains(out, dir) || home != "" && within(home, dir) {
			continue
		}
		out = append(out, dir)
	}
	return out
}

// writable lists what commands may change: the workspace, the caches
// (unless locked: those in the home directory and those env's cache
// variables name), the policy's extra paths.
func (p *Policy) writable(jp jailPaths) []string {
	w := []string{jp.workspace}
	if !p.LockCaches {
		// Made when missing: what pip install --user and XDG tools write
		// to, which a read-only home would refuse to have created.
		for _, dir := range inHome(p.home(), []string{".cache", ".local"}) {
			_ = os.MkdirAll(dir, 0o755)
		}
		w = append(w, inHome(p.home(), cachePaths)...)
		w = append(w, p.envCaches(jp.env, append([]string{"/tmp"}, jp.serverTemp...))...)
	}
	return append(w, p.Writable...)
}

// readOnly lists what stays read-only inside the writable paths: what
// protected lists in the workspace (a repository's hooks and config, whose
// core.hooksPath, core.fsmonitor and friends would run code outside the
// jail at the user's next git command, and its nested ones), and the
// policy's extra paths.
func (p *Policy) readOnly(workspace string) []string {
	_, ro := protected(workspace, nil)
	return append(ro, p.ReadOnly...)
}

// landlockWritable is what the agent's Landlock rules let commands write.
func (p *Policy) landlockWritable(jp jailPaths) []string {
	return slices.Concat(p.writable(jp), []string{"/tmp", "/dev"}, p.tempCovers(jp.serverTemp))
}

// tmpfsArgs mount a private, empty file system in memory on dir, with
// mode perm, at most size bytes large (≤ 0: the kernel's default, half
// the machine's memory).
func tmpfsArgs(dir string, perm os.FileMode, size int64) []string {
	a := []string{"--perms", strconv.FormatUint(uint64(perm), 8)}
	if size > 0 {
		a = append(a, "--size", strconv.FormatInt(size, 10))
	}
	return append(a, "--tmpfs", dir)
}

// bindArgs binds each existing path onto itself.
func bindArgs(op string, paths []string) []string {
	var a []string
	for _, path := range paths {
		if _, err := os.Stat(path); err == nil {
			a = append(a, op, path, path)
		}
	}
	return a
}

// hideOps cover each existing path: a directory with an empty read-only
// tmpfs, anything else with /dev/null. A symlink is left alone: what it
// points to is hidden by its own entry. A path inside a directory it hides
// is hidden with it (and could not be covered on its own in the empty
// read-only directory).
func (p *Policy) hideOps(paths []string) []mountOp {
	var dirs, files []string
	for _, path := range paths {
		path = filepath.Clean(path)
		fi, err := os.Lstat(path)
		switch {
		case err != nil || fi.Mode()&os.ModeSymlink != 0:
		case fi.IsDir():
			dirs = append(dirs, path)
		default:
			files = append(files, path)
		}
	}
	var ops []mountOp
	for _, dir := range dirs {
		if !insideOther(dir, dirs) {
			ops = append(ops, mountOp{mountHideDir, dir})
		}
	}
	for _, file := range files {
		if !insideOther(file, dirs) {
			ops = append(ops, mountOp{mountHideFile, file})
		}
	}
	return ops
}

// insideOther reports whether path lies under one of dirs other than
// itself.
func insideOther(path string, dirs []string) bool {
	for _, dir := range dirs {
		if dir != path && within(path, dir) {
			return true
		}
	}
	return false
}
