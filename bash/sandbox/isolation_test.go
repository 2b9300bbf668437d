//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == noMainArg {
		// A program that forgot Main: New says so.
		_, err := New(context.Background(), nil)
		fmt.Println(err)
		os.Exit(0)
	}
	Main()
	if len(os.Args) == 6 && os.Args[1] == layerArg {
		os.Exit(layerServer(os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Stdout))
	}
	if len(os.Args) == 4 && os.Args[1] == propagationArg {
		os.Exit(warmPropagation(os.Args[2], os.Args[3], os.Stdout))
	}
	proctest.QuickRaceExit()
	proctest.RaiseParallel(4)
	code := m.Run()
	for _, dir := range []string{agentDir, probeDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newSandbox makes a sandbox executor, skipping the test where the host
// cannot run one, unless CI=true: CI installs bubblewrap, so there a
// missing sandbox is a failure. Its jails start plainAgent unless o names
// an agent.
func newSandbox(tb testing.TB, o *Options) (*Executor, error) {
	tb.Helper()
	if o.Agent == "" {
		o.Agent = plainAgent(tb)
	}
	e, err := New(context.Background(), o)
	if errors.Is(err, ErrUnavailable) && os.Getenv("CI") != "true" {
		tb.Skip(err)
	}
	return e, err
}

// rig is two sessions of one executor, each with its own workspace, and a
// fake home directory holding a key.
type rig struct {
	e          bash.Executor
	wsA, wsB   string
	home       string
	outside    string // a directory outside every workspace and /tmp
	sandboxed  bool
	vid        bash.TaskID // the victim task of the current attack
	gate       string      // a FIFO the victim waits on before it ends
	victims    int         // victims started so far
	serverPid  string
	spillMatch string
	abstract   string // the name of an abstract unix socket the test listens on
	sock       string // a unix socket the test listens on, in the hidden ~/.ssh
	shmKey     int    // a System V shared memory segment of the test's
	pts        string // a terminal of the test's (/dev/pts/N)
}

// newRig makes the rig: sandboxed in layer (LayerJail or LayerLandlock),
// or not sandboxed (LayerAuto).
func newRig(t *testing.T, layer Layer) *rig {
	t.Helper()
	sandboxed := layer != LayerAuto
	r := &rig{wsA: t.TempDir(), wsB: t.TempDir(), home: t.TempDir(), sandboxed: sandboxed,
		serverPid: strconv.Itoa(os.Getpid())}
	outside, err := os.MkdirTemp("/var/tmp", "dsh-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	r.outside = outside
	r.abstract = listenAbstract(t)
	os.MkdirAll(filepath.Join(r.home, ".ssh"), 0o700)
	r.sock = listenUnix(t, filepath.Join(r.home, ".ssh", "agent.sock"))
	r.shmKey = sharedMemory(t, r.secret("shm"))
	r.pts = openTerminal(t)
	os.WriteFile(filepath.Join(r.home, ".ssh", "id_ed25519"), []byte("PRIVATE-KEY-MATERIAL\n"), 0o600)
	for _, repo := range []string{".git", "sub/.git", "sub/deeper/.git"} {
		os.MkdirAll(filepath.Join(r.wsB, repo, "hooks"), 0o755)
		os.WriteFile(filepath.Join(r.wsB, repo, "config"), []byte("[core]\n"), 0o644)
	}
	// A repository with none of the entries git does without.
	os.MkdirAll(filepath.Join(r.wsB, "bare", ".git"), 0o755)
	os.WriteFile(filepath.Join(r.wsB, "bare", ".git", "config"), []byte("[core]\n"), 0o644)
	os.MkdirAll(filepath.Join(r.wsB, "wt"), 0o755)
	os.WriteFile(filepath.Join(r.wsB, "wt", ".git"), []byte("gitdir: ../.git/worktrees/wt\n"), 0o644)
	os.MkdirAll(filepath.Join(r.wsB, ".vscode"), 0o755)
	os.MkdirAll(filepath.Join(r.wsB, ".dsh"), 0o755)
	os.WriteFile(filepath.Join(r.wsB, ".dsh", "permissions.json"), []byte("{}\n"), 0o644)
	// The executor's temporary files go outside /tmp (as with TMPDIR=/var/tmp/…),
	// which the jails' private /tmp would not cover of itself.
	tmp := filepath.Join(outside, "tmp")
	os.Mkdir(tmp, 0o700)
	lo := &local.Options{Cwd: r.wsA, MaxOutputBytes: 1000, Grace: 200 * time.Millisecond,
		Env: []string{"HOME=" + r.home}, SpillDir: tmp}
	if sandboxed {
		r.e, err = newSandbox(t, &Options{Layer: layer, Local: lo, Policy: Policy{Home: r.home}, TempDir: tmp})
	} else {
		r.e, err = local.New(lo)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.e.Close() })
	return r
}

// probe is the command that runs the system call probe
// (internal/probe) with args from session B's workspace (the jail does
// not see the build's /tmp).
func (r *rig) probe(args ...string) string { return probeIn(r.wsB, args...) }

// probeIn is the command that runs the system call probe with args from
// a link (else a copy) in dir, which a jail sees: never the build itself,
// which a command could then change.
func probeIn(dir string, args ...string) string {
	bin := filepath.Join(dir, "probe")
	if _, err := os.Stat(bin); err != nil {
		built, err := buildProbe()
		if err != nil {
			panic(err) // the tests cannot probe: none of them can tell
		}
		if os.Link(built, bin) != nil {
			proctest.CopyProgram(built, bin)
		}
	}
	return strings.Join(append([]string{bin}, args...), " ")
}

// buildProbe builds internal/probe once per test process, without the
// race detector, into probeDir (which TestMain removes).
var buildProbe = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "dsh-probe-")
	if err != nil {
		return "", err
	}
	probeDir = dir
	bin := filepath.Join(dir, "probe")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := proctest.Build(ctx, bin, "github.com/dshgo/dsh/bash/sandbox/internal/probe"); err != nil {
		return "", fmt.Errorf("the probe: %w", err)
	}
	return bin, nil
})

// probeDir is the directory buildProbe made, if any.
var probeDir string

// listenUnix listens on a unix socket at path until the test ends.
func listenUnix(t *testing.T, path string) string {
	serve(t, "unix", path)
	return path
}

// serve listens on address until the test ends, accepting and closing
// every connection; it returns the listener's address.
func serve(t *testing.T, network, address string) net.Addr {
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr()
}

// sharedMemory makes a System V shared memory segment holding text, removed
// when the test ends, and returns its key.
func sharedMemory(t *testing.T, text string) int {
	h := fnv.New32a()
	h.Write([]byte(t.TempDir()))
	key := int(h.Sum32() & 0x7fffffff)
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	b, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	copy(b, text)
	unix.SysvShmDetach(b)
	return key
}

// openTerminal opens a new terminal, held until the test ends, and returns
// the path of its terminal side.
func openTerminal(t *testing.T) string {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	return "/dev/pts/" + strconv.Itoa(n)
}

// listenAbstract listens on an abstract unix socket until the test ends,
// and returns its name (without the leading @).
func listenAbstract(t *testing.T) string {
	h := fnv.New64a()
	h.Write([]byte(t.TempDir())) // unique to this test among parallel ones
	name := fmt.Sprintf("dsh-test-%d-%x", os.Getpid(), h.Sum64())
	serve(t, "unix", "@"+name)
	return name
}

// victimEnds reports whether the victim task ends within bound (a killed
// task is noticed as soon as its processes are gone).
func (r *rig) victimEnds(bound time.Duration) bool {
	ended := make(chan struct{}, 1)
	unsubscribe := r.e.OnTaskDone(func(tk bash.Task) {
		if tk.ID == r.vid {
			ended <- struct{}{}
		}
	})
	defer unsubscribe()
	if tk, _ := r.e.Get(context.Background(), r.vid); tk.Done() {
		return true // it ended before the listener was there
	}
	select {
	case <-ended:
		return true
	case <-time.After(bound):
		return false
	}
}

func (r *rig) run(t *testing.T, owner, ws, cmd string) bash.RunResult {
	t.Helper()
	ctx := context.Background()
	spec, err := r.e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: owner, Workspace: ws, Workdir: ws, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// victim starts session A's long task, which prints a secret to a spill
// file first, and returns its id.
func (r *rig) victim(t *testing.T) bash.TaskID {
	t.Helper()
	ctx := context.Background()
	// The FIFO is in the victim's workspace: the jail sees it there.
	r.victims++
	fifo := filepath.Join(r.wsA, "started-"+strconv.Itoa(r.victims))
	r.gate = filepath.Join(r.wsA, "gate-"+strconv.Itoa(r.victims))
	for _, f := range []string{fifo, r.gate} {
		if err := unix.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	spec, _ := r.e.Resolve(ctx, bash.ExecRequest{Owner: "alice", Workspace: r.wsA, Workdir: r.wsA,
		Command: "echo " + r.secret("file") + " > ${TMPDIR:-/tmp}/victim-file; for i in $(seq 300); do echo " + r.secret("output") + "; done; echo $$ > " + fifo + "; read _ < " + r.gate + "; : " + r.marker()})
	tk, err := r.e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	proctest.PidFromFIFO(t, fifo) // it has printed its secret and is sleeping
	return tk.ID
}

// secret is what this rig's victims write (to a file, or as output): each
// rig's own, so that rigs of other layers, running at the same time and
// keeping their files in /var/tmp too, do not confuse the attacks.
func (r *rig) secret(kind string) string {
	return fmt.Sprintf("victim-secret-%s-%d-%p", kind, os.Getpid(), r)
}

// marker is in the command line of the current victim alone (other test
// processes, and the other rig, have victims of their own).
func (r *rig) marker() string {
	return fmt.Sprintf("dsh-victim-marker-%d-%p-%d", os.Getpid(), r, r.victims)
}

// findVictim is shell that sets $v to the pid of the victim's shell, found
// by its command line in /proc, as an attacker would.
func (r *rig) findVictim() string {
	m := r.marker()
	// [x]: the grep of the attacker's own shell does not match itself.
	pattern := "[" + m[:1] + "]" + m[1:]
	return `v=$(grep -la ` + pattern + ` /proc/[0-9]*/cmdline 2>/dev/null | tail -1); v=${v#/proc/}; v=${v%/cmdline}; `
}

// searchTmp is shell that prints a line holding secret from a file under
// /var/tmp or /tmp, where a session's spill files and temporary files
// are, and nothing where none is found. It looks at the files directly
// in both first, then through /var/tmp, then through /tmp, and stops at
// the first match: the tests' files are in /var/tmp (newRig) or directly
// in /tmp (the victim's file where TMPDIR is unset), and the host's
// /tmp, which a rig without a sandbox sees, can hold gigabytes (build
// caches) that a grep of it would read whole.
//
// It skips binary files once they show a NUL (test binaries, profiles)
// and never opens a FIFO or a device, which a grep would wait on.
func searchTmp(secret string) string {
	grep := `f=$(grep -hsI -D skip -m1 ` + secret + ` `
	return grep + `/var/tmp/* /tmp/* 2>/dev/null | head -1); test -n "$f" || ` +
		`for d in /var/tmp /tmp; do ` + strings.Replace(grep, "-hs", "-rhs", 1) + `$d 2>/dev/null | head -1); test -n "$f" && break; done; echo "$f"`
}

// attack is one attempt by session B (bob) to reach beyond its session;
// succeeded reports, from its output and the host's state, whether it got
// there.
type attack struct {
	name      string
	cmd       func(r *rig) string
	succeeded func(t *testing.T, r *rig, out string) bool
}

var attacks = []attack{
	{"read the server's environment",
		func(r *rig) string { return "cat /proc/" + r.serverPid + "/environ | head -c 100 | wc -c" },
		func(t *testing.T, r *rig, out string) bool { return strings.TrimSpace(out) != "0" }},
	{"read the server's memory map",
		func(r *rig) string { return "head -1 /proc/" + r.serverPid + "/maps" },
		func(t *testing.T, r *rig, out string) bool { return strings.TrimSpace(out) != "" }},
	{"signal the server",
		func(r *rig) string { return "kill -0 " + r.serverPid + " && echo reachable" },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "reachable") }},
	{"read another session's output",
		func(r *rig) string { return r.findVictim() + `test -n "$v" && head -c 0 /proc/$v/fd/1 && echo opened` },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "opened") }},
	{"inject into another session's output",
		func(r *rig) string { return r.findVictim() + `test -n "$v" && echo injected-by-bob > /proc/$v/fd/1` },
		func(t *testing.T, r *rig, out string) bool {
			// Once the victim has ended, all its pipe held has been read.
			testwait.WriteFIFO(t, r.gate, "end", "the victim's gate")
			if !r.victimEnds(testwait.Limit) {
				t.Fatal("the victim did not end when let go")
			}
			rd, _ := r.e.ReadOutput(context.Background(), r.vid)
			return strings.Contains(rd.Stdout.Text, "injected-by-bob")
		}},
	{"kill another session's process",
		func(r *rig) string { return r.findVictim() + `test -n "$v" && kill -9 -- -$v` },
		func(t *testing.T, r *rig, out string) bool { return r.victimEnds(3 * time.Second) }},
	{"read another session's spill file",
		func(r *rig) string {
			return searchTmp(r.secret("output"))
		},
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, r.secret("output")) }},
	{"read another session's /tmp",
		func(r *rig) string {
			return searchTmp(r.secret("file"))
		},
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, r.secret("file")) }},
	{"reach the cgroup file system",
		func(r *rig) string { return "find /sys/fs/cgroup -maxdepth 2 -name cgroup.procs | head -1" },
		func(t *testing.T, r *rig, out string) bool { return strings.TrimSpace(out) != "" }},
	{"read an ssh key",
		func(r *rig) string { return "cat " + filepath.Join(r.home, ".ssh", "id_ed25519") },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "PRIVATE-KEY") }},
	{"write outside the workspace",
		func(r *rig) string { return "echo x > " + filepath.Join(r.outside, "planted") },
		func(t *testing.T, r *rig, out string) bool {
			_, err := os.Stat(filepath.Join(r.outside, "planted"))
			return err == nil
		}},
	{"plant a git hook path",
		func(r *rig) string {
			return "printf '\\thooksPath = /x\\n' >> .git/config; echo x > .git/hooks/pre-commit"
		},
		func(t *testing.T, r *rig, out string) bool {
			b, _ := os.ReadFile(filepath.Join(r.wsB, ".git", "config"))
			_, err := os.Stat(filepath.Join(r.wsB, ".git", "hooks", "pre-commit"))
			return strings.Contains(string(b), "hooksPath") || err == nil
		}},
	{"rename .git and make a new repository",
		func(r *rig) string {
			return "mv .git .git-old && mkdir .git && printf '[core]\\n\\tfsmonitor = x\\n' > .git/config"
		},
		func(t *testing.T, r *rig, out string) bool {
			_, err := os.Stat(filepath.Join(r.wsB, ".git-old"))
			return err == nil || hostFileChanged(r, ".git/config", "[core]\n")
		}},
	{"plant code in nested repositories",
		func(r *rig) string {
			return "for g in sub/.git sub/deeper/.git; do printf '\\tfsmonitor = x\\n' >> $g/config; echo x > $g/hooks/post-checkout; done"
		},
		func(t *testing.T, r *rig, out string) bool {
			_, err := os.Stat(filepath.Join(r.wsB, "sub", ".git", "hooks", "post-checkout"))
			return err == nil || hostFileChanged(r, "sub/.git/config", "[core]\n") || hostFileChanged(r, "sub/deeper/.git/config", "[core]\n")
		}},
	{"create the git entries a repository lacks",
		// A commondir naming a copy with a configuration of the command's
		// choosing, a hook, attributes naming a filter, a worktree config.
		func(r *rig) string {
			return "for g in .git bare/.git; do echo /var/tmp/evil > $g/commondir; done; g=bare/.git; " +
				"mkdir -p $g/hooks $g/info; echo x > $g/hooks/post-checkout; " +
				"echo '* filter=x' > $g/info/attributes; echo '[core]' > $g/config.worktree"
		},
		func(t *testing.T, r *rig, out string) bool {
			for _, rel := range []string{".git/commondir", "bare/.git/commondir"} {
				if b, err := os.ReadFile(filepath.Join(r.wsB, rel)); err == nil && string(b) != "." {
					return true
				}
			}
			g := filepath.Join(r.wsB, "bare", ".git")
			_, err := os.Stat(filepath.Join(g, "hooks", "post-checkout"))
			attrs, _ := os.ReadFile(filepath.Join(g, "info", "attributes"))
			wtConfig, _ := os.ReadFile(filepath.Join(g, "config.worktree"))
			return err == nil || len(attrs) > 0 || len(wtConfig) > 0
		}},
	{"redirect a worktree's .git file",
		func(r *rig) string { return "echo 'gitdir: /var/tmp/evil' > wt/.git" },
		func(t *testing.T, r *rig, out string) bool {
			return hostFileChanged(r, "wt/.git", "gitdir: ../.git/worktrees/wt\n")
		}},
	{"plant editor tasks or widen the project's rules",
		func(r *rig) string {
			return "echo '{}' > .vscode/tasks.json; echo '{\"allow\": [\"*\"]}' > .dsh/permissions.json"
		},
		func(t *testing.T, r *rig, out string) bool {
			_, err := os.Stat(filepath.Join(r.wsB, ".vscode", "tasks.json"))
			return err == nil || hostFileChanged(r, ".dsh/permissions.json", "{}\n")
		}},
	{"make forbidden system calls",
		func(r *rig) string { return r.probe() },
		func(t *testing.T, r *rig, out string) bool {
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.HasSuffix(line, ": operation not permitted") {
					return true // one got past the filter
				}
			}
			return false
		}},
	{"make a system call of the x32 ABI",
		func(r *rig) string { return r.probe("x32") },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "x32:") }},
	{"reach an abstract unix socket outside the jail",
		// The jail shares the host's network namespace (the network is on),
		// and with it the abstract sockets (X11's, D-Bus's, …).
		func(r *rig) string { return r.probe("abstract", r.abstract) },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "abstract: connected") }},
	{"connect to a unix socket in a hidden directory",
		// An ssh agent's, tmux's or docker's socket: Landlock alone does
		// not stop a connect by path.
		func(r *rig) string { return r.probe("unix", r.sock) },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "unix: connected") }},
	{"read another process's System V shared memory",
		func(r *rig) string { return r.probe("shm", strconv.Itoa(r.shmKey)) },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, r.secret("shm")) }},
	{"open a terminal of the host",
		// Its keystrokes could be read, and keystrokes typed into it.
		func(r *rig) string { return r.probe("pty", r.pts) },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "pty: opened") }},
	{"read the system's password hashes and host keys",
		// As root (here) the owner's read bit lets any process read them.
		func(r *rig) string {
			return "cat /etc/shadow /etc/ssh/ssh_host_*_key 2>/dev/null | wc -c"
		},
		func(t *testing.T, r *rig, out string) bool {
			return strings.TrimSpace(out) != "0" || os.Geteuid() != 0 && !r.sandboxed
		}},
	{"hold capabilities",
		// As root (here) or with file capabilities, commands would hold
		// some; in the jail's user namespace, bwrap would give them all.
		func(r *rig) string { return "grep CapEff /proc/self/status" },
		func(t *testing.T, r *rig, out string) bool {
			return !strings.Contains(out, "0000000000000000") || os.Geteuid() != 0 && !r.sandboxed
		}},
	{"make a user namespace",
		func(r *rig) string { return "unshare -U true && echo made" },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "made") }},
	{"make a user namespace with clone3",
		// clone3's flags are behind a pointer no seccomp filter reads: a
		// user namespace would give back the capabilities (over its own
		// network namespace: nftables, the kernel's favourite target).
		func(r *rig) string { return r.probe("userns") },
		func(t *testing.T, r *rig, out string) bool { return strings.Contains(out, "userns: succeeded") }},
}

// hostFileChanged reports whether the file at rel in session B's workspace
// no longer holds want, on the host.
func hostFileChanged(r *rig, rel, want string) bool {
	b, err := os.ReadFile(filepath.Join(r.wsB, rel))
	return err != nil || string(b) != want
}

// landlockLimits are the attacks the Landlock layer does not stop, by
// design (it has no mounts to make paths in the workspace read-only), as
// the README says; TestIsolation checks that each still succeeds there, so
// that the list stays true.
var landlockLimits = map[string]bool{
	"plant a git hook path":                           true,
	"rename .git and make a new repository":           true,
	"plant code in nested repositories":               true,
	"create the git entries a repository lacks":       true,
	"redirect a worktree's .git file":                 true,
	"plant editor tasks or widen the project's rules": true,
}

// TestIsolation runs every attack from session B while session A works.
// In the jail each one must fail; in the Landlock layer each one but its
// documented limits; against the local executor each one must succeed,
// which shows that the test can see it happen.
func TestIsolation(t *testing.T) {
	t.Parallel()
	for _, layer := range []Layer{LayerJail, LayerLandlock, LayerAuto} {
		t.Run(map[Layer]string{LayerJail: "sandbox", LayerLandlock: "landlock", LayerAuto: "local"}[layer], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, layer)
			for _, a := range attacks {
				t.Run(a.name, func(t *testing.T) {
					r.vid = r.victim(t)
					defer r.e.Kill(context.Background(), r.vid)
					res := r.run(t, "bob", r.wsB, a.cmd(r))
					got := a.succeeded(t, r, res.Stdout.Text)
					if want := !r.sandboxed || layer == LayerLandlock && landlockLimits[a.name]; got != want {
						t.Errorf("succeeded=%v, want %v (layer %v)\nstdout: %s\nstderr: %s", got, want, layer, res.Stdout.Text, res.Stderr.Text)
					}
				})
			}
		})
	}
}

// TestNetworkOff: with NetworkOff a jailed command cannot reach a server
// on the host's loopback (its own loopback is another); with NetworkOn the
// same command does, which shows the test can tell.
func TestNetworkOff(t *testing.T) {
	t.Parallel()
	port := strconv.Itoa(serve(t, "tcp", "127.0.0.1:0").(*net.TCPAddr).Port)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpPort := strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)
	// udpGot is what reached the UDP listener since the last call (the
	// datagram is sent before the command ends; a second is plenty).
	udpGot := func() string {
		var got []string
		buf := make([]byte, 64)
		for {
			udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			n, _, err := udp.ReadFrom(buf)
			if err != nil {
				return strings.Join(got, ",")
			}
			got = append(got, string(buf[:n]))
		}
	}
	for _, c := range []struct {
		network Network
		layer   Layer
	}{{NetworkOn, LayerJail}, {NetworkOff, LayerJail}, {NetworkOn, LayerLandlock}, {NetworkOff, LayerLandlock}} {
		network := c.network
		ws := t.TempDir()
		e, err := newSandbox(t, &Options{Layer: c.layer, Policy: Policy{Network: network}, Local: &local.Options{Cwd: ws}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx := context.Background()
		spec, err := e.Resolve(ctx, bash.ExecRequest{Owner: "o", Workspace: ws, Workdir: ws,
			Command: "(exec 3<>/dev/tcp/127.0.0.1/" + port + ") 2>/dev/null && echo connected || echo refused; " +
				"echo udp-" + c.layer.String() + " 2>/dev/null > /dev/udp/127.0.0.1/" + udpPort + "; " + probeIn(ws, "mptcp", "127.0.0.1:"+port)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		want := map[Network]string{NetworkOn: "connected\nmptcp: connected\n", NetworkOff: "refused\nmptcp: refused\n"}[network]
		if strings.Replace(res.Stdout.Text, "mptcp: unsupported\n", "mptcp: "+map[Network]string{NetworkOn: "connected", NetworkOff: "refused"}[network]+"\n", 1) != want {
			t.Errorf("network %v, layer %v: %q, want %q", network, c.layer, res.Stdout.Text, want)
		}
		if got := udpGot(); strings.Contains(got, "udp-"+c.layer.String()) != (network == NetworkOn) {
			t.Errorf("network %v, layer %v: the UDP listener got %q", network, c.layer, got)
		}
	}
}

// noMainArg makes the test binary a program that makes a sandbox
// without calling Main.
const noMainArg = "__dsh_test_no_main"

// TestNoMain: a program that makes a sandbox without calling Main is told
// what is missing, at once, instead of a sandbox that is gone at its first
// call.
func TestNoMain(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(os.Args[0], noMainArg).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != ErrNoMain.Error() {
		t.Errorf("got %q", got)
	}
}
