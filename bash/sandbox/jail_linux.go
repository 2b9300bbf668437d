package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"golang.org/x/sys/unix"
)

// errJailGone: the jail's agent is gone (the jail was closed, or it died),
// and with it every process of the jail.
var errJailGone = errors.New("the session's sandbox is gone")

// jail is one running bwrap jail and the connection to its agent.
type jail struct {
	key   string
	owner string

	closeOnce sync.Once // close
	closeErr  error
	unpin     func() // releases the owner's spill directory
	cg        jailCgroups
	limit     string   // the memory limit, as the model reads it
	deny      []string // the deny rules its agent enforces at exec
	tmp       string   // the Landlock layer's: the session's temporary directory, its TMPDIR

	egress    Egress        // NetworkAllowlist: the proxy, for the listener the agent sends
	proxyL    net.Listener  // that listener, set by the reader before ready
	proxyDone chan struct{} // closed once Serve returned
	forwards  []Forward     // NetworkAllowlist: Policy.Forward
	fwd       forwarded     // their listeners, served by the Forwarder

	// fenced: the jail has a network namespace of its own, and its
	// commands the fence (see fence), whose supervisor the reader sets
	// before ready, or why there is none (fenceErr: unix sockets are
	// refused instead).
	fenced   bool
	private  []string // the jail's own tmpfs mounts, for the fence
	fence    *fence
	fenceErr string

	// A jail of the warm pool (see pool): claimed is closed when a
	// session claims it, before the claim is sent; idle once its agent
	// said it waits for one, with (in a jail) mntns, the jail's mount
	// namespace; sig is what it was started for (poolTemplate.sig), which
	// a claim must match. Nil channels, and mntns -1, for a session's own.
	claimed, idle chan struct{}
	mntns         int
	sig           string
	alone         bool // the Landlock layer's agent, which no bwrap starts
	// clone3Wanted: the Landlock layer's agent is to hand the host its
	// forker's clone3 listener, whose supervisor the reader sets before
	// ready (clone3), unless the kernel cannot supervise it (usernsErr).
	clone3Wanted bool
	clone3       *clone3Guard
	// usernsErr: why the Landlock layer's commands may make user
	// namespaces, as its agent's ready message says (see clone3Guard).
	usernsErr string

	afterStart func(pidfd int) // Options.afterStart
	git        *gitHolds       // the jail's (none in the Landlock layer); under mu once started
	gitLost    map[string]bool // git directories the model was told are gone, under mu

	cmd    *exec.Cmd
	stderr *capBuffer
	sock   *os.File
	sendMu sync.RWMutex // senders share it; closing the socket takes it alone
	nextID atomic.Uint64

	startDone chan struct{} // closed once the start is over; then startErr is set
	startErr  error
	ready     chan struct{} // closed once the agent said it is ready
	gone      chan struct{} // closed once the connection to the agent is over
	readDone  chan struct{} // closed once nothing reads the socket (any more)
	exited    chan struct{} // closed once bwrap has been waited for

	mu      sync.Mutex
	err     error // why it is gone
	waiters map[uint64]*waiter
}

// waiter is one shell's pending answers.
type waiter struct {
	started  chan agentMsg // with pidfd in fds
	pidfd    int
	exited   chan local.ExitStatus
	answered bool           // under jail.mu: started has its answer
	oomBase  uint64         // the jail's memory-limit kills before the shell was asked for
	refused  local.Refusals // under jail.mu: the shell's tree's refused execs
}

// startJail starts bwrap with the agent and waits until the agent is ready.
func (js *jails) startJail(ctx context.Context, j *jail, req *local.SpawnRequest) error {
	reading := false
	defer func() {
		if !reading {
			close(j.readDone)
		}
	}()
	spill, unpin, err := js.hold(req.Owner)
	if err != nil {
		return fmt.Errorf("keep the session's spill directory: %w", err)
	}
	j.unpin = unpin
	files, err := js.jailFiles(len(req.ExecRules.Patterns()) > 0, true)
	if err != nil {
		return err
	}
	j.sock = files[0]
	jp := jailPaths{workspace: req.Workspace, tmpSize: js.limits.limits.Tmp, spill: spill, serverTemp: js.serverTemp, env: req.Env, systemHidden: js.systemHidden,
		deny: req.ExecRules.Patterns()}
	j.deny = jp.deny
	js.networkOf(j)
	if js.layer == LayerLandlock {
		err = js.agentCmd(j, jp)
	} else {
		err = js.bwrapCmd(j, jp)
	}
	if err != nil {
		closeFiles(files...)
		return err
	}
	if reading, err = js.launch(j, files); err != nil {
		return err
	}
	return js.awaitReady(ctx, j, fmt.Errorf("the sandbox did not start within %v (%s: %s)", js.startTimeout, j.starter(), bwrapSaid(j)))
}

// awaitReady waits for j's agent to say it is ready, within the start
// timeout (late is the error then), and notes why j could not be
// fenced, if it could not.
func (js *jails) awaitReady(ctx context.Context, j *jail, late error) error {
	ctx, cancel := context.WithTimeoutCause(ctx, js.startTimeout, late)
	defer cancel()
	if err := j.await(ctx, j.ready); err != nil {
		return err
	}
	js.noteAgentErrs(j)
	return nil
}

// networkOf sets what a jail of the policy's network needs: the proxy
// and the forwards of a NetworkAllowlist jail, which its agent's
// listeners are served with once it is ready.
func (js *jails) networkOf(j *jail) {
	if js.policy.Network == NetworkAllowlist {
		j.egress = js.egress
		j.forwards = js.policy.Forward
	}
}

// launch starts the process j.cmd describes (files are jailFiles'; it
// closes them but the host's socket, j.sock), in the jail's cgroups,
// then the reader of the agent's messages; reading says the reader runs
// (and will close readDone).
func (js *jails) launch(j *jail, files []*os.File) (reading bool, err error) {
	j.cmd.ExtraFiles, j.cmd.Stderr, j.cmd.WaitDelay = files[1:], j.stderr, bwrapWaitDelay
	if j.cg, err = js.limits.make(j.claimed != nil); err != nil {
		closeFiles(files...)
		return false, err
	}
	j.limit = "memory limit " + ByteSize(js.limits.limits.Memory)
	err = js.spawner.start(js.limits, j.cg, j.cmd.Start)
	// bwrap holds its copies now: ours would keep the agent's end of the
	// socket open after bwrap is gone, and its exit unnoticed.
	closeFiles(files[1:]...)
	if err != nil {
		return false, fmt.Errorf("start %s: %w", filepath.Base(j.cmd.Path), err)
	}
	go func() { _ = j.cmd.Wait(); close(j.exited) }()
	go j.read()
	return true, nil
}

// bwrapCmd is the command of a jail: bwrap, running the agent inside. The
// jail holds the placeholders of the git directories it binds (see
// gitHolds) from here on.
func (js *jails) bwrapCmd(j *jail, jp jailPaths) error {
	var err error
	j.git = &gitHolds{}
	args := js.policy.bwrapArgs(jp, func(gd string) {
		if err == nil {
			err = j.git.hold(jp.workspace, gd)
		}
	})
	if err != nil {
		return err
	}
	js.fenceOf(j, jp)
	args = append(append(args, "--", "/proc/self/fd/"+strconv.Itoa(fdAgentExe)), agentArgs(js.jailAgent(j, jp))...)
	// A process group of its own: see jail.kill.
	j.cmd = &exec.Cmd{Path: js.bwrap, Args: append([]string{"bwrap"}, args...), Env: jp.env,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	return nil
}

// fenceOf sets whether a jail is fenced, and its own tmpfs mounts, which
// its fence tells apart from the host's file systems.
func (js *jails) fenceOf(j *jail, jp jailPaths) {
	j.fenced = js.policy.Network != NetworkOn && !js.noFence
	j.private = append([]string{"/tmp", "/dev"}, js.policy.tempCovers(jp.serverTemp)...)
}

// jailAgent is the configuration of a jail's agent for a session.
func (js *jails) jailAgent(j *jail, jp jailPaths) agentConfig {
	return agentConfig{Socket: fdAgentSock, Exe: fdAgentExe, Writable: js.policy.landlockWritable(jp), Proxy: j.egress != nil, Fence: j.fenced,
		Deny: jp.deny, DenyPath: envPath(jp.env), Forward: agentForwards(j.forwards)}
}

// bwrapWaitDelay bounds how long bwrap's stderr is read after bwrap has
// exited: a process it left outside the jail may hold it open, and bwrap's
// end must be noticed all the same.
const bwrapWaitDelay = 500 * time.Millisecond

// starter names the process that starts the jail, for errors: bwrap, or
// the Landlock layer's agent, which runs alone.
func (j *jail) starter() string {
	if j.alone {
		return "the sandbox's agent"
	}
	return "bwrap"
}

// bwrapSaid is what bwrap has written to stderr so far, or that it wrote
// nothing.
func bwrapSaid(j *jail) string {
	if msg := strings.TrimSpace(j.stderr.String()); msg != "" {
		return msg
	}
	return "nothing on stderr"
}

// jailFiles opens what bwrap inherits: [host socket, agent socket, agent
// executable, seccomp filter (traced: the variant that lets the agent
// trace its shells; only with filter)]; the first stays with the host.
func (js *jails) jailFiles(traced, filter bool) ([]*os.File, error) {
	host, agentSock, err := socketPair()
	if err != nil {
		return nil, err
	}
	exe, err := os.Open(js.agent)
	if err != nil {
		closeFiles(host, agentSock)
		return nil, fmt.Errorf("open the agent binary: %w", err)
	}
	if !filter {
		return []*os.File{host, agentSock, exe}, nil
	}
	f, err := js.filterFile(traced)
	if err != nil {
		closeFiles(host, agentSock, exe)
		return nil, err
	}
	return []*os.File{host, agentSock, exe, f}, nil
}

// filterFile is the jails' seccomp filter, the variant of traced, in a
// file.
func (js *jails) filterFile(traced bool) (*os.File, error) {
	b := js.filter[btoi(traced)]
	if js.layer == LayerLandlock {
		b = js.layerFilter[btoi(traced)]
	}
	return filterFile(b)
}

// filterFile is a sealed memfd holding the seccomp filter.
func filterFile(b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("dsh-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("make the seccomp filter file: %w", err)
	}
	f := os.NewFile(uintptr(fd), "dsh-seccomp")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// await waits until the agent says it is ready (ch, j.ready) or idle
// (j.idle), bwrap or the agent ends, or ctx ends.
func (j *jail) await(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-j.gone:
		return j.goneErr()
	case <-j.exited:
		return fmt.Errorf("%s ended (%v) before the sandbox started: %s", j.starter(), j.cmd.ProcessState, bwrapSaid(j))
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// fail records why the connection ended and wakes every waiter.
func (j *jail) fail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	if errors.Is(err, errEOF) {
		err = errJailGone
	}
	j.err = err
	close(j.gone)
}

// goneErr says why the jail is gone, with what bwrap printed.
func (j *jail) goneErr() error {
	j.mu.Lock()
	err := j.err
	j.mu.Unlock()
	select {
	case <-j.exited:
	case <-time.After(time.Second): // the message is worth a short wait
	}
	if msg := strings.TrimSpace(j.stderr.String()); msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}

// spawn asks the agent to start one shell.
func (j *jail) spawn(req *local.SpawnRequest) (local.Process, error) {
	if !slices.Equal(req.ExecRules.Patterns(), j.deny) {
		// Its agent traces with the rules it started with, or not at all.
		return nil, errors.New("the deny rules enforced at exec changed since the session's sandbox started: start a new session")
	}
	id := j.nextID.Add(1)
	// The count before the request: the shell may run into the limit
	// before its start is answered, and a kill counted then is its own.
	w := &waiter{started: make(chan agentMsg, 1), exited: make(chan local.ExitStatus, 1), oomBase: j.cg.oomKills()}
	j.mu.Lock()
	if j.err != nil {
		j.mu.Unlock()
		return nil, errJailGone
	}
	j.waiters[id] = w
	j.mu.Unlock()
	if err := j.send(id, req); err != nil {
		j.forget(id)
		return nil, err
	}
	select {
	case m := <-w.started:
		if j.afterStart != nil && m.Err == "" {
			j.afterStart(w.pidfd)
		}
		return j.started(m, w, req)
	case <-j.gone:
		return nil, j.goneErr()
	}
}

func (j *jail) send(id uint64, req *local.SpawnRequest) error {
	procs, err := j.cgroupProcs(req.CgroupFD)
	if err != nil {
		return err
	}
	if procs >= 0 {
		defer unix.Close(procs)
	}
	m := spawnMsg{ID: id, Path: req.Path, Args: req.Args, Dir: req.Dir, Env: j.env(req.Env),
		NExtra: len(req.ExtraFiles), Cgroup: req.CgroupFD >= 0, Setsid: req.Setsid, Stdin: req.Stdin != nil, Setctty: req.Setctty}
	fds := []int{int(req.Stdout.Fd()), int(req.Stderr.Fd())}
	for _, f := range req.ExtraFiles {
		fds = append(fds, int(f.Fd()))
	}
	switch {
	case procs >= 0:
		fds = append(fds, procs)
	case m.Cgroup:
		fds = append(fds, req.CgroupFD)
	}
	if m.Stdin {
		fds = append(fds, int(req.Stdin.Fd()))
	}
	j.sendMu.RLock()
	defer j.sendMu.RUnlock()
	if j.sock == nil {
		return errJailGone
	}
	return sendMsg(int(j.sock.Fd()), m, fds)
}

// cgroupProcs opens, for a jail whose agent traces its shells (which
// then cannot start one into a cgroup, and may not open cgroup files in
// its Landlock domain), the cgroup.procs of a command's cgroup (dirfd;
// -1: none), into which the agent moves the shell before it runs; else
// -1.
func (j *jail) cgroupProcs(dirfd int) (int, error) {
	if len(j.deny) == 0 || dirfd < 0 {
		return -1, nil
	}
	fd, err := unix.Openat(dirfd, "cgroup.procs", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the command's cgroup: %w", err)
	}
	return fd, nil
}

func (j *jail) forget(id uint64) {
	j.mu.Lock()
	delete(j.waiters, id)
	j.mu.Unlock()
}

// started turns the agent's answer into a Process.
func (j *jail) started(m agentMsg, w *waiter, req *local.SpawnRequest) (local.Process, error) {
	if m.Err != "" {
		j.forget(m.ID)
		if m.Workdir {
			return nil, workdirError(req.Dir, syscall.Errno(m.Errno))
		}
		if m.Errno != 0 {
			return nil, fmt.Errorf("start bash in the sandbox: %w", syscall.Errno(m.Errno))
		}
		return nil, fmt.Errorf("start bash in the sandbox: %s", m.Err)
	}
	defer unix.Close(w.pidfd)
	pid, err := pidfdPid(w.pidfd)
	if err != nil {
		return nil, err
	}
	return &jailProc{pid: pid, w: w, j: j}, nil
}

// workdirError is the typed error for a working directory the jail lacks:
// one that the host has is outside the jail's view.
func workdirError(dir string, errno syscall.Errno) error {
	var err error = errno
	switch {
	case errno == unix.ENOTDIR:
		err = bash.ErrNotDirectory
	case errno == unix.ENOENT && isDir(dir):
		err = bash.ErrOutsideSandbox
	}
	return &bash.WorkdirError{Path: dir, Err: err}
}

// isDir reports whether path is a directory on the host.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// pidfdPid reads the pid a pidfd refers to, in our pid namespace.
func pidfdPid(fd int) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, fmt.Errorf("find the shell's pid: %w", err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
			return strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	return 0, errors.New("find the shell's pid: no Pid in its pidfd's fdinfo")
}

// jailProc is a shell started in a jail.
type jailProc struct {
	pid int
	w   *waiter
	j   *jail
}

func (p *jailProc) Pid() int { return p.pid }

// Wait returns the shell's own wait status, as the agent (its parent) saw
// it, naming the memory limit when it killed a process of the session
// while the shell ran (the shell itself, or one of its commands).
func (p *jailProc) Wait() (local.ExitStatus, error) {
	select {
	case st := <-p.w.exited:
		// The kernel counts a kill before it sends SIGKILL, so a kill
		// that ended the shell, or any process it waited for, is counted.
		if p.j.cg.oomKills() > p.w.oomBase {
			st.Limit = p.j.limit
		}
		st.Note = p.j.gitNote(st.Code != 0)
		return st, nil
	case <-p.j.gone:
		select {
		case st := <-p.w.exited:
			return st, nil
		default:
			return local.ExitStatus{Code: -1}, errJailGone
		}
	}
}

// kill kills the process that starts the jail and the rest of its process
// group (it leads one): a start cut short leaves there bwrap's child, which
// waits for bwrap to set it up and would have no parent to die with.
func (j *jail) kill() {
	_ = unix.Kill(-j.cmd.Process.Pid, unix.SIGKILL)
	_ = j.cmd.Process.Kill()
}

// close ends the jail: the agent sees its socket close and exits, and the
// kernel kills every process left in the jail's pid namespace. A jail whose
// agent never said it was ready has no agent to wait for: bwrap is killed,
// with its process group.
//
// It is done once: a session's end and a start that failed may both
// drop the jail, at the same time; the second waits for the first.
func (j *jail) close() error {
	j.closeOnce.Do(func() { j.closeErr = j.closeNow() })
	return j.closeErr
}

// closeNow is close, done.
func (j *jail) closeNow() error {
	if j.sock != nil {
		_ = unix.Shutdown(int(j.sock.Fd()), unix.SHUT_RDWR)
	}
	if j.cmd != nil && j.cmd.Process != nil {
		wait := 5 * time.Second
		select {
		case <-j.ready:
		case <-j.idle: // nil but in a pooled jail
		default:
			wait = 0
		}
		select {
		case <-j.exited:
		case <-time.After(wait):
			j.kill()
			<-j.exited
		}
	}
	j.sendMu.Lock()
	if j.sock != nil {
		<-j.readDone // the reader has stopped using the socket
		j.sock.Close()
		j.sock = nil
	}
	j.sendMu.Unlock()
	j.closeProxy() // after the reader, which set it
	if j.mntns >= 0 {
		unix.Close(j.mntns) // after the reader, which set it
	}
	if j.fence != nil {
		j.fence.close() // after the jail's processes
	}
	if j.clone3 != nil {
		j.clone3.close() // after the jail's processes
	}
	if j.unpin != nil {
		j.unpin()
	}
	j.mu.Lock()
	if j.git != nil {
		j.git.release() // after the jail's processes, and its mounts
	}
	j.mu.Unlock()
	// Its processes are gone; the kernel may not have released the last
	// of them yet: a cgroup still busy is left for the executor's Close,
	// or the next start's CleanStale.
	_ = j.cg.remove()
	if j.tmp != "" {
		return removeTree(j.tmp)
	}
	return nil
}

// removeTree removes a jail's /tmp, making directories writable first
// where a command took the write bit away.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
