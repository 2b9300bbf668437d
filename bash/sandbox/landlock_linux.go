package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// fdFilter is where the Landlock layer's agent finds the seccomp filter
// (the fourth of jailFiles, after the socket and the executable).
const fdFilter = 5

// landlockABI is the Landlock ABI the kernel offers (0: none).
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// agentCmd is the command of a session of the Landlock layer: the agent,
// run directly, which restricts itself before it starts any shell. The
// session gets a temporary directory of its own, its commands' TMPDIR.
func (js *jails) agentCmd(j *jail, jp jailPaths) error {
	agent, err := js.layerAgent(j, jp)
	if err != nil {
		return err
	}
	agent.Filter = fdFilter
	js.aloneCmd(j, agent, jp.env)
	return nil
}

// layerAgent is the configuration of a Landlock-layer agent for a
// session, whose temporary directory (j.tmp) it makes.
func (js *jails) layerAgent(j *jail, jp jailPaths) (agentConfig, error) {
	tmp, err := js.sessionTemp()
	if err != nil {
		return agentConfig{}, err
	}
	j.tmp = tmp
	c := agentConfig{Socket: fdAgentSock, Exe: fdAgentExe, Alone: true, NoClone3Guard: js.noClone3Guard,
		Writable:   slices.Concat(js.policy.writable(jp), []string{tmp}, landlockDevices),
		Readable:   js.policy.landlockReadable(jp, tmp),
		NetworkOff: js.policy.Network == NetworkOff, Deny: jp.deny, DenyPath: envPath(jp.env)}
	j.clone3Wanted = c.clone3Guarded()
	return c, nil
}

// aloneCmd is the command of a Landlock-layer agent of configuration c:
// the agent itself, which dies with the server.
func (js *jails) aloneCmd(j *jail, c agentConfig, env []string) {
	j.alone = true
	j.cmd = &exec.Cmd{Path: js.agent, Args: append([]string{js.agent}, agentArgs(c)...), Env: env,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true}}
}

// landlockDevices are the devices commands of the Landlock layer may
// write: the harmless ones. Not the terminals: /dev/pts holds the host's,
// whose keystrokes a command could read and into which it could type.
var landlockDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// sessionTemp makes a session's temporary directory, in a directory of
// the executor's own stamped for CleanStale.
func (js *jails) sessionTemp() (string, error) {
	js.rootOnce.Do(func() {
		js.root, js.rootErr = os.MkdirTemp(js.tempDir, jailsPrefix())
	})
	if js.rootErr != nil {
		return "", fmt.Errorf("make the sessions' directory: %w", js.rootErr)
	}
	dir, err := os.MkdirTemp(js.root, "tmp-")
	if err != nil {
		return "", fmt.Errorf("make the session's temporary directory: %w", err)
	}
	return dir, nil
}

// landlockHidden are hidden in the Landlock layer besides the jail's
// hidden paths: what a jail has its own of (shared memory, terminals,
// /tmp). /tmp holds the server's temporary directories where $TMPDIR is
// in it: hidden whole, it is not listed entry by entry around them (a
// rule each: thousands, on a busy machine, at each session's start).
var landlockHidden = []string{"/dev/shm", "/dev/pts", "/dev/ptmx", "/tmp"}

// landlockReadable is what commands of the Landlock layer may read: the
// whole tree but the hidden paths (the credentials, the runtime and
// cgroup directories, the policy's, and the executor's temporary
// directories, where other sessions' files and the server's are), and
// then the session's own spill and temporary directories.
func (p *Policy) landlockReadable(jp jailPaths, tmp string) []string {
	hidden := slices.Concat(p.hiddenPaths(), landlockHidden, jp.serverTemp)
	var real []string
	for _, h := range hidden {
		if r := realPath(h); filepath.IsAbs(r) {
			real = append(real, r)
		}
	}
	return append(around("/", true, real), jp.spill, tmp, jp.workspace)
}

// around lists the paths that cover the tree at dir but the hidden ones:
// dir itself when no hidden path lies in it, else (recursively) its
// entries. An entry that is a link into a hidden path is left out (a rule
// on a link applies to its target). real says dir has no link in it (its
// own path is what a rule on it covers): then neither have its entries
// but the links among them, and their paths need no resolving. A jail's
// start walks here through the directories that hold hidden paths (/tmp,
// the home directory) whatever their size, so this is kept to string
// comparisons and one lstat per link.
func around(dir string, real bool, hidden []string) []string {
	in := false
	for _, h := range hidden {
		if h == dir {
			return nil
		}
		in = in || under(h, dir)
	}
	if !in {
		if !real {
			if r := realPath(dir); r != dir && linksInto(r, hidden) {
				return nil
			}
		}
		return []string{dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, around(filepath.Join(dir, e.Name()), real && e.Type()&fs.ModeSymlink == 0, hidden)...)
	}
	return out
}

// under reports whether path is dir or lies in it; both are clean and
// absolute (within, for any two paths, costs a filepath.Rel).
func under(path, dir string) bool {
	return path == dir || dir == "/" || len(path) > len(dir) && path[len(dir)] == '/' && path[:len(dir)] == dir
}

// linksInto reports whether a link's target r is, holds or lies in a
// hidden path.
func linksInto(r string, hidden []string) bool {
	for _, h := range hidden {
		if r == "/" || under(h, r) || under(r, h) {
			return true
		}
	}
	return false
}

// env is the environment of a shell of the jail: the Landlock layer's
// point TMPDIR at the session's temporary directory.
func (j *jail) env(env []string) []string {
	if j.egress != nil {
		env = withProxyEnv(env)
	}
	if j.tmp == "" {
		return env
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+j.tmp)
}

// fallBack turns a jails of LayerAuto, whose jail did not work, to the
// Landlock layer, if the kernel has Landlock; it reports whether it did.
func (js *jails) fallBack() bool {
	if js.layer != LayerJail || landlockABI() < 1 || js.policy.Network == NetworkAllowlist {
		return false
	}
	js.layer = LayerLandlock
	return true
}

// kind is the layer of the jails.
func (js *jails) kind() Layer { return js.layer }

// whyNoJail says why LayerAuto chose the Landlock layer without trying a
// jail (nil if it did not).
func (js *jails) whyNoJail() error { return js.noJail }
