package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/dshgo/dsh/internal/fds"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// agentArg, as argv[1], makes a binary that calls Main the agent of a jail.
const agentArg = "__dsh_sandbox_agent"

// agentConfig is what the host tells the agent on its command line.
type agentConfig struct {
	Socket   int      `json:"socket"`   // its end of the socket pair
	Exe      int      `json:"exe"`      // the descriptor it was executed from
	Writable []string `json:"writable"` // Landlock: paths commands may write

	// The Landlock layer's (see LayerLandlock), where the agent is not a
	// jail's pid 1 but a process of the host's:
	Alone      bool     `json:"alone,omitempty"`      // a subreaper, without capabilities
	Readable   []string `json:"readable,omitempty"`   // Landlock: paths commands may read (else all)
	Filter     int      `json:"filter,omitempty"`     // the seccomp filter to install itself (bwrap did in a jail)
	NetworkOff bool     `json:"networkOff,omitempty"` // Landlock: no TCP connect or bind
	// NoClone3Guard leaves the commands' clone3 unsupervised (see
	// clone3Guard): Options.noClone3Guard, for a benchmark.
	NoClone3Guard bool `json:"noClone3Guard,omitempty"`

	// Proxy: listen at ProxyAddr and hand the listener to the host with
	// the first message (NetworkAllowlist), then one per Forward.
	Proxy   bool           `json:"proxy,omitempty"`
	Forward []agentForward `json:"forward,omitempty"`
	// Fence: put the commands under the fence's filter, and hand its
	// listener and a sock_diag socket of the jail's network namespace to
	// the host with the first message (a jail with a network namespace
	// of its own; see fence).
	Fence bool `json:"fence,omitempty"`
	// Deny: deny rules enforced at every exec of the jail's processes
	// (local.Options.ExecRules), the named programs looked up in DenyPath.
	Deny     []string `json:"deny,omitempty"`
	DenyPath string   `json:"denyPath,omitempty"`

	// Pooled: a jail (or Landlock-layer agent) of the warm pool, started
	// before any session asks: the agent says it is idle and waits for
	// the claim, which brings the rest of this configuration (see
	// awaitClaim); it has no other on its command line.
	Pooled bool `json:"pooled,omitempty"`
}

// clone3Guarded says whether the agent puts its forker's clone3 under
// the host's supervision (see clone3Guard): in the Landlock layer, unless
// told not to, or its deny rules make the forker a tracer, whose clone
// filter refuses clone3 outright (see startForker).
func (c agentConfig) clone3Guarded() bool {
	return c.Alone && !c.NoClone3Guard && len(c.Deny) == 0
}

// Main runs the sandbox agent when this process was started as one, and
// never returns then; otherwise it returns at once. A program that makes a
// sandbox Executor must call it first thing in main (and a test binary in
// TestMain): the sandbox starts each jail's agent by executing the running
// binary again.
func Main() {
	mainCalled.Store(true)
	if len(os.Args) < 3 || os.Args[1] != agentArg {
		return
	}
	var c agentConfig
	if err := json.Unmarshal([]byte(os.Args[2]), &c); err != nil {
		fmt.Fprintln(os.Stderr, "dsh sandbox agent:", err)
		os.Exit(2)
	}
	if err := runAgent(c); err != nil {
		fmt.Fprintln(os.Stderr, "dsh sandbox agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// agent is the first process of a jail (pid 1 of its pid namespace). It
// starts the shells the host asks for, reaps every process of the jail and
// reports how each shell ended. When the host's end of the socket closes it
// exits, and the kernel kills every process left in the jail.
type agent struct {
	sock    int
	devNull int
	forker  *forker // forks every shell

	mu     sync.Mutex // held from a fork until the shell is registered
	shells map[int]uint64
}

func runAgent(c agentConfig) error {
	unix.Close(c.Exe)
	// The socket, and whatever the server inherited from its own parent,
	// came without close-on-exec: every shell would get them, and with the
	// socket (fd 3) speak for the agent.
	if err := fds.CloseOnExecFrom(3); err != nil {
		return fmt.Errorf("close-on-exec: %w", err)
	}
	// As pid 1 of the jail, a signal from inside is dropped unless a handler
	// is installed; catching every one (and discarding it) keeps commands
	// from killing the agent, while the shells still start with the default
	// dispositions (a caught signal is reset at exec, an ignored one is not).
	others, chld := make(chan os.Signal, 16), make(chan os.Signal, 1)
	signal.Notify(others)
	signal.Notify(chld, unix.SIGCHLD)
	go func() {
		for range others {
		}
	}()
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if c.Alone {
		if err := alone(); err != nil {
			return err
		}
	}
	if c.Pooled {
		var err error
		if c, err = awaitClaim(c); errors.Is(err, errEOF) {
			return nil // the pool closed, or the host went, before a session claimed it
		} else if err != nil {
			return err
		}
	}
	// In the Landlock layer the agent restricts itself, on every thread;
	// in a jail, where the mounts confine it already, the thread that
	// starts the shells alone (see startForker): no thread of the agent's
	// has to stop for it, which, with many sessions claiming warm jails at
	// once, each waited for the CPU to do.
	ruleset := landlockRuleset{fd: -1}
	if c.Alone {
		if err := restrictFiles(c); err != nil {
			return err
		}
	} else {
		var err error
		if ruleset, err = forkerRuleset(c); err != nil {
			return err
		}
	}
	if c.Filter > 0 {
		if err := installFilter(c.Filter); err != nil {
			return err
		}
	}
	devNull, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	// The fence's sock_diag socket, made first: without it the host
	// could not tell the session's sockets from the host's.
	diag, why := -1, error(nil)
	if c.Fence {
		if diag, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG); err != nil {
			why = fmt.Errorf("no sock_diag socket (%w): unix sockets are refused", err)
		}
	}
	a := &agent{sock: c.Socket, devNull: devNull, shells: map[int]uint64{}}
	var g *guard
	if len(c.Deny) > 0 {
		if g, err = newGuard(a, c.Deny, c.DenyPath, chld); err != nil {
			return err
		}
	}
	fk, listener, why, err := startForker(c.Fence, c.clone3Guarded(), why, g, ruleset)
	if err != nil {
		return err
	}
	a.forker = fk
	if g == nil {
		go a.reapOn(chld)
	}
	if err := a.ready(c, listener, diag, why); err != nil {
		return err
	}
	return a.serve()
}

// awaitClaim is a pooled agent's wait for its session. It tells the host
// it is idle, handing over, in a jail, the jail's mount namespace (where
// the host binds the session's workspace, its spill directory and what
// stays read-only in it before the claim comes), then takes the rest of
// its configuration from the claim: all but its socket and executable
// (and whether it is alone), which it was started with; the Landlock
// layer's seccomp filter comes with the claim (a jail's bwrap installed
// it already).
func awaitClaim(c agentConfig) (agentConfig, error) {
	var fds []int
	if !c.Alone {
		ns, err := unix.Open("/proc/self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return c, fmt.Errorf("open the jail's mount namespace: %w", err)
		}
		defer unix.Close(ns)
		fds = []int{ns}
	}
	if err := sendMsg(c.Socket, agentMsg{Idle: true}, fds); err != nil {
		return c, err
	}
	var claim agentConfig
	got, err := recvMsg(c.Socket, make([]byte, maxPacket+1), &claim)
	if err != nil {
		return c, err
	}
	if len(got) != btoi(c.Alone) {
		closeFDs(got)
		return c, fmt.Errorf("the claim came with %d descriptors, not %d", len(got), btoi(c.Alone))
	}
	claim.Socket, claim.Exe, claim.Alone, claim.Pooled, claim.Filter = c.Socket, c.Exe, c.Alone, false, 0
	if c.Alone {
		claim.Filter = got[0]
	}
	return claim, nil
}

// ready tells the host the agent is ready, handing it the proxy and
// forward listeners if it wants them, then the fence's listener and
// sock_diag socket where it has them (else why not, in FenceErr), then
// the forker's clone3 listener where it has one (else why not, in
// UsernsErr).
func (a *agent) ready(c agentConfig, listener, diag int, why error) error {
	if listener < 0 && diag >= 0 {
		unix.Close(diag)
	}
	fds, skipped, err := listeners(c)
	if err != nil {
		return err
	}
	defer func() { closeFDs(fds) }()
	m := agentMsg{Started: true, Skipped: skipped, UsernsErr: a.forker.usernsErr}
	if listener >= 0 {
		fds = append(fds, listener, diag)
		m.Fence = true
	}
	if why != nil {
		m.FenceErr = why.Error()
	}
	if a.forker.clone3 >= 0 {
		fds = append(fds, a.forker.clone3) // closed here once sent: the host's alone
		m.Clone3, m.Forker = true, a.forker.tid
		a.forker.clone3 = -1
	}
	return sendMsg(a.sock, m, fds)
}

// restrictFiles is the whole of the Landlock layer, and the second layer
// under a jail's mounts (there on the forker's thread alone: see
// forkerRuleset): Landlock lets commands read and execute everywhere (or,
// in the Landlock layer, where c.Readable says) but write only to
// c.Writable, keeps them from signalling, or reaching the abstract
// sockets of, anything outside the jail, and (c.NetworkOff) from TCP. It
// does what the kernel supports, on every thread of the agent.
//
// Every thread has no new privileges already (alone): the rules are
// enforced on all at once, by the kernel where it can (Landlock ABI 8),
// else by stopping each thread once.
func restrictFiles(c agentConfig) error {
	cfg, rules := fileRules(c)
	self := strconv.Itoa(os.Getpid())
	rules = append(rules,
		// The agent's own oom_score_adj, which it raises for each fork
		// (see fork).
		landlock.RWFiles("/proc/"+self+"/oom_score_adj").IgnoreIfMissing(),
		// What libpsx (cgo builds) reads after it has enforced the rules
		// on each thread.
		landlock.PathAccess(llsys.AccessFSReadDir, "/proc/"+self+"/task").IgnoreIfMissing())
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	if landlockABI() >= 8 {
		err = llsys.LandlockRestrictSelf(fd, flags|llsys.FlagRestrictSelfTSync)
	} else {
		err = llsys.AllThreadsLandlockRestrictSelf(fd, flags)
	}
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// landlockRuleset is a Landlock ruleset made, not yet enforced (fd -1:
// none, where the kernel has no Landlock).
type landlockRuleset struct {
	fd    int
	flags uint32
}

// forkerRuleset is restrictFiles' ruleset for a jail's forker thread,
// which restrictThread enforces there.
func forkerRuleset(c agentConfig) (landlockRuleset, error) {
	cfg, rules := fileRules(c)
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return landlockRuleset{fd: -1}, fmt.Errorf("landlock: %w", err)
	}
	return landlockRuleset{fd: fd, flags: flags}, nil
}

// restrictThread enforces r on the calling thread, locked to its
// goroutine for good, and closes it.
func (r landlockRuleset) restrictThread() error {
	if r.fd < 0 {
		return nil
	}
	defer unix.Close(r.fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no new privileges: %w", err)
	}
	if err := llsys.LandlockRestrictSelf(r.fd, r.flags); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// fileRules are restrictFiles' configuration and rules. One ruleset for
// files, scopes and the network: every Landlock domain refuses to link or
// move a file across directories unless one of its own rules grants it
// (LANDLOCK_ACCESS_FS_REFER), so a second, scopes-only domain would break
// hard links in the workspace (git's quarantined pushes, for one).
func fileRules(c agentConfig) (landlock.Config, []landlock.Rule) {
	rules := []landlock.Rule{landlock.RODirs("/")}
	if c.Readable != nil {
		rules = pathRules(c.Readable, landlock.RODirs, landlock.ROFiles)
	}
	rules = append(rules, pathRules(c.Writable, func(p ...string) landlock.FSRule {
		return landlock.RWDirs(p...).WithRefer()
	}, landlock.RWFiles)...)
	cfg := landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS, Scoped: landlock.V7.Scoped}
	if c.NetworkOff {
		cfg.HandledAccessNet = landlock.V7.HandledAccessNet
	}
	return cfg, rules
}

// pathRules makes a rule of each path that exists: dirs for a directory,
// files for a file or a device (what is gone by the time the rules are
// made, another process's temporary file, is left out).
func pathRules(paths []string, dirs, files func(...string) landlock.FSRule) []landlock.Rule {
	var rules []landlock.Rule
	for _, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			continue
		case fi.IsDir():
			rules = append(rules, dirs(p).IgnoreIfMissing())
		case fi.Mode().IsRegular() || fi.Mode()&os.ModeCharDevice != 0:
			rules = append(rules, files(p).IgnoreIfMissing())
		} // not a pipe or a socket (/dev/stderr may be one): Landlock has no rule for them
	}
	return rules
}

// serve starts the shells the host asks for, until the host hangs up.
func (a *agent) serve() error {
	buf := make([]byte, maxPacket+1)
	for {
		var m spawnMsg
		fds, err := recvMsg(a.sock, buf, &m)
		if errors.Is(err, errEOF) {
			return nil
		}
		if err != nil {
			return err
		}
		a.spawn(&m, fds)
		closeFDs(fds)
	}
}

// spawn starts one shell and tells the host, under mu so that the reaper
// reports its end only after its start.
func (a *agent) spawn(m *spawnMsg, fds []int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	pid, pidfd, err := a.fork(m, fds)
	if err != nil {
		reply := agentMsg{ID: m.ID, Err: err.Error(), Workdir: errors.Is(err, errWorkdir)}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			reply.Errno = int(errno)
		}
		_ = sendMsg(a.sock, reply, nil)
		return
	}
	a.shells[pid] = m.ID
	_ = sendMsg(a.sock, agentMsg{ID: m.ID, Started: true}, []int{pidfd})
	unix.Close(pidfd)
}

func (a *agent) fork(m *spawnMsg, fds []int) (pid, pidfd int, err error) {
	want := 2 + m.NExtra + btoi(m.Cgroup) + btoi(m.Stdin)
	if len(fds) != want {
		return 0, 0, fmt.Errorf("got %d descriptors, want %d", len(fds), want)
	}
	stdin := a.devNull
	if m.Stdin {
		stdin, fds = fds[len(fds)-1], fds[:len(fds)-1]
	}
	if err := checkDir(m.Dir); err != nil {
		return 0, 0, err
	}
	files := []uintptr{uintptr(stdin)}
	for _, fd := range fds[:2+m.NExtra] {
		files = append(files, uintptr(fd))
	}
	pidfd = -1
	sys := &syscall.SysProcAttr{Setsid: m.Setsid, Setctty: m.Setctty && m.Stdin && m.Setsid, Ctty: 0, PidFD: &pidfd}
	procs := -1 // with the guard: the cgroup's cgroup.procs, which the host opened
	switch {
	case m.Cgroup && a.forker.guard != nil:
		procs = fds[len(fds)-1]
	case m.Cgroup:
		sys.UseCgroupFD, sys.CgroupFD = true, fds[len(fds)-1]
	}
	// The shell inherits the agent's oom_score_adj: raised for the fork, a
	// session's memory limit kills its commands before its agent (which
	// may lower it back, to its own floor, unprivileged).
	own, oerr := os.ReadFile("/proc/self/oom_score_adj")
	if oerr == nil {
		_ = os.WriteFile("/proc/self/oom_score_adj", []byte(commandOOMScoreAdj), 0)
	}
	sys.Ptrace = a.forker.guard != nil
	a.forker.do(func() {
		pid, err = syscall.ForkExec(m.Path, m.Args, &syscall.ProcAttr{Dir: m.Dir, Env: m.Env, Files: files, Sys: sys})
		if err == nil && sys.Ptrace {
			if err = a.forker.adopt(pid, procs); err != nil {
				unix.Close(pidfd)
				pidfd = -1
			}
		}
	})
	if oerr == nil {
		_ = os.WriteFile("/proc/self/oom_score_adj", own, 0)
	}
	return pid, pidfd, err
}

// commandOOMScoreAdj is the commands' oom_score_adj in a jail.
const commandOOMScoreAdj = "500"

// errWorkdir marks a working directory that does not exist in the jail
// (it may on the host: /tmp is the jail's own) or is no directory.
var errWorkdir = errors.New("unusable working directory")

func checkDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("%w: %w", errWorkdir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%w: %w", errWorkdir, unix.ENOTDIR)
	}
	return nil
}

// reapOn reaps every child that ends (the shells, and every orphan of the
// jail, which the kernel gives to pid 1) and reports the shells' ends.
func (a *agent) reapOn(sigs <-chan os.Signal) {
	for range sigs {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			a.ended(pid, ws)
		}
	}
}

func (a *agent) ended(pid int, ws unix.WaitStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := a.shells[pid]
	if !ok {
		return // an orphan of the jail
	}
	delete(a.shells, pid)
	m := agentMsg{ID: id, Exited: true, Code: ws.ExitStatus()}
	if ws.Signaled() {
		m.Code, m.Signal = -1, int(ws.Signal())
	}
	_ = sendMsg(a.sock, m, nil)
}

// agentArgs is the agent's command line after its executable.
func agentArgs(c agentConfig) []string {
	b, _ := json.Marshal(c)
	return []string{agentArg, string(b)}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
