package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/observe"
)

// ErrUnavailable: the sandbox cannot run on this host (no bwrap, no user
// namespaces, not Linux). Its error says what to install or enable.
var ErrUnavailable = errors.New("the sandbox is unavailable")

// errAllowlistNeedsJail: the Landlock layer has no network namespace in
// which to confine commands to the proxy.
var errAllowlistNeedsJail = errors.New("the network allowlist needs the jail (bubblewrap, with user namespaces): the Landlock layer can turn TCP off but cannot confine it to the proxy; give the network off, or on")

// mainCalled records that the program called Main: without it, the
// running binary started as a jail's agent would run the program again
// instead, and every call would fail with a sandbox that is gone.
var mainCalled atomic.Bool

// ErrNoMain: New was called in a program that did not call Main (and no
// Options.Agent names a binary that does).
var ErrNoMain = errors.New("sandbox: Main was not called: a program that makes a sandbox Executor must call sandbox.Main() first thing in main (each jail's agent is the running binary, started again), or set Options.Agent to a binary that does")

// Options configures a sandbox Executor. A nil *Options, and every zero
// field, means the default named on the field.
type Options struct {
	// Local configures the executor that runs inside: timeouts, limits,
	// spill files, environment scrubbing. Its Spawn must be nil (the
	// sandbox sets it).
	Local *local.Options
	// Policy is what commands may see and change.
	Policy Policy
	// Bwrap is the bubblewrap binary, a path or a name looked up in PATH.
	// Default "bwrap".
	Bwrap string
	// Agent is the binary started as each jail's agent; it must call Main
	// first thing. Default: the running binary.
	Agent string
	// TempDir is the executor's temporary directory, which jails see
	// covered by a private /tmp of their own (as they see /tmp). Default:
	// os.TempDir().
	TempDir string
	// StartTimeout bounds the start of a jail, until its agent says it is
	// ready (about 15 ms here); a start that takes longer fails, saying
	// what bwrap printed. Default 30 s.
	StartTimeout time.Duration
	// Limits bound each session's memory and processes.
	Limits Limits
	// Layer is the kind of sandbox: LayerAuto (the default) is the jail
	// where bubblewrap can make one, else the Landlock layer.
	Layer Layer
	// Egress is the proxy of NetworkAllowlist jails, which New requires
	// then: each jail's listener at ProxyAddr is handed to Serve, with the
	// session's owner token, and closed when the jail ends; EndOwner is
	// called when the session ends. An *egress.Proxy is one.
	Egress Egress
	// AllowUnsandboxed lets a spec marked Unsandboxed (the user said yes
	// to that one call) run outside the sandbox; by default such a spec
	// fails with bash.ErrSandboxFinal, and the sandbox is final.
	AllowUnsandboxed bool
	// Warm is how many started jails (in the Landlock layer, agents) to
	// keep ready for new sessions, so that a session's first call costs
	// what a later one does. A warm jail holds nothing of any session's;
	// the session that claims it gets its workspace, spill directory,
	// read-only paths, Landlock rules and deny rules bound in then, and
	// it serves that session alone and ends with it, as a jail started
	// for it would. The pool is refilled in the background. Each idle
	// jail costs its processes (bwrap and the agent) and their memory.
	// In a jail, the claim enters the jail's mount namespace, which takes
	// a server run as root (CAP_SYS_ADMIN); New refuses a pool of jails
	// that cannot work here. Default 0: none, each session's jail starts
	// on its first call.
	Warm int
	// WarmRefillDelay is how long the pool waits after a claim, for
	// another that does not come, before it starts the jails that replace
	// those claimed: the sessions of a burst do not share the CPU with
	// the pool's refill. Default DefaultWarmRefillDelay; negative: none.
	WarmRefillDelay time.Duration
	// Observe receives an observe.JailStart for each jail started (for
	// a session, or for the warm pool) and each warm one claimed; nil
	// discards them.
	Observe observe.Sink
	// Logf reports what happens outside any call: a warm jail that did
	// not start (and when the pool tries again), one that ended while
	// idle, one whose claim failed (the session gets a jail started for
	// it instead). Nil discards it.
	Logf func(format string, args ...any)

	// noFence leaves the jails without the fence, for benchmarks that
	// measure it.
	noFence bool
	// noClone3Guard leaves the Landlock layer's commands' clone3
	// unsupervised (see clone3Guard), for the benchmark that measures it.
	noClone3Guard bool
	// afterStart, for tests, runs once a jail's agent has answered a
	// spawn with the shell's pidfd, before the answer is taken up.
	afterStart func(pidfd int)
	// noCheck, for tests, makes New skip its check (a command in a
	// throwaway jail), with Layer the one an earlier check found here:
	// for the conformance suite's executors, made by the hundred.
	noCheck bool
	// warmOnce, for tests, has the warm pool start its Warm jails once,
	// and no more after claims.
	warmOnce bool
}

// DefaultWarmRefillDelay is Options.WarmRefillDelay by default.
const DefaultWarmRefillDelay = 100 * time.Millisecond

// Egress serves the connections the commands of a session make through
// its jail's proxy listener.
type Egress interface {
	Serve(l net.Listener, owner string) error
	EndOwner(owner string)
}

// Layer is a kind of sandbox.
type Layer int

const (
	// LayerAuto is the strongest layer that works here.
	LayerAuto Layer = iota
	// LayerJail is a bubblewrap jail per session: its own mounts (a
	// private /tmp, read-only .git and editor files in the workspace),
	// pid, ipc and (with NetworkOff) network namespaces, no capability,
	// the seccomp filter, and Landlock inside.
	LayerJail
	// LayerLandlock needs no namespace and no privilege, for where user
	// namespaces are blocked (Ubuntu's AppArmor restriction, Docker's
	// seccomp profile, a sandbox within a sandbox): a helper per session
	// restricts itself, and so its commands, with Landlock (see the
	// package doc), the same seccomp filter, no capability and no new
	// privileges. Commands get no /proc, /tmp or network of their own, and
	// .git and editor files in the workspace stay writable.
	LayerLandlock
)

// String is how flags and messages name the layer.
func (l Layer) String() string {
	switch l {
	case LayerJail:
		return "jail"
	case LayerLandlock:
		return "landlock"
	}
	return "auto"
}

// Executor runs every command in a jail of its session; see the package
// doc. It is a bash.Executor: a local executor (cgroups, output, spill
// files, adoption, kill escalation, limits: all as package local does them)
// whose shells start inside the jails. Make one with New; Close it when
// done.
type Executor struct {
	*local.Executor
	jails *jails

	home     string   // the policy's home directory
	tempDirs []string // where the jails' /tmp and the spill files are made
	jailErr  error    // why LayerAuto fell back to the Landlock layer
	egress   Egress   // Options.Egress
	checks   atomic.Uint64
}

var _ bash.Executor = (*Executor)(nil)

// New makes a sandbox executor. It runs one command in a throwaway jail
// first, and fails with an error matching ErrUnavailable when that cannot
// work here, so that a host without jails fails at New, not at the
// model's first command. With Options.Warm, it then claims a warm jail of
// its own, failing (with another error: the sandbox works, its pool does
// not) where that cannot work, and starts the pool.
func New(ctx context.Context, opts *Options) (*Executor, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	lo := local.Options{}
	if o.Local != nil {
		lo = *o.Local
	}
	if lo.Spawn != nil {
		return nil, errors.New("sandbox: Options.Local.Spawn must be nil")
	}
	if o.Agent == "" && !mainCalled.Load() {
		return nil, ErrNoMain
	}
	if o.Warm < 0 {
		return nil, fmt.Errorf("sandbox: Options.Warm must not be negative (got %d)", o.Warm)
	}
	if o.Bwrap == "" {
		o.Bwrap = "bwrap"
	}
	e := &Executor{egress: o.Egress, home: o.Policy.home(), tempDirs: []string{tempDirOr(o.TempDir), tempDirOr(lo.SpillDir)}}
	lo.Spawn = func(ctx context.Context, req *local.SpawnRequest) (local.Process, error) {
		return e.jails.spawn(ctx, req)
	}
	le, err := local.New(&lo)
	if err != nil {
		return nil, err
	}
	e.Executor = le
	admit := func(ws string) error { return checkWorkspace(ws, e.home, e.tempDirs) }
	if e.jails, err = newJails(&o, e.tempDirs, le.HoldSpillDir, admit); err != nil {
		le.Close()
		return nil, err
	}
	if !o.noCheck {
		err = e.checkLayer(ctx, &o)
	}
	if err == nil {
		err = e.startPool(ctx, &o, lo.ExecRules, !o.noCheck)
	}
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// checkLayer is New's check, which falls back from LayerAuto's jail to
// the Landlock layer where jails cannot work.
func (e *Executor) checkLayer(ctx context.Context, o *Options) error {
	err := e.check(ctx)
	if err != nil && o.Policy.Network == NetworkAllowlist && o.Layer == LayerAuto && errors.Is(err, ErrUnavailable) {
		// Where a Landlock layer would have stood in: say why it cannot.
		err = fmt.Errorf("%w (%w)", err, errAllowlistNeedsJail)
	}
	if err != nil && o.Layer == LayerAuto && e.jails.fallBack() {
		// No jail here (user namespaces blocked): the Landlock layer.
		e.jailErr = err
		if err = e.check(ctx); err != nil {
			err = fmt.Errorf("%w; and the jail: %w", err, e.jailErr)
		}
	}
	return err
}

// PoolStatus is the state of the warm pool (Options.Warm): ready is how
// many warm jails are started and idle now, target how many the pool
// keeps (0: no pool). A new session starts warm while ready is above 0.
// A readiness check (/readyz) can ask for that (ready == target flips
// while the pool refills after each burst of claims); a metric shows
// both. It never waits for a jail.
func (e *Executor) PoolStatus() (ready, target int) { return e.jails.poolStatus() }

// Layer is the layer the executor's sandbox is (LayerJail or
// LayerLandlock), and why not a jail when it is the Landlock layer
// (Options.Layer LayerAuto on a host without jails).
func (e *Executor) Layer() (Layer, error) {
	if e.jailErr != nil {
		return e.jails.kind(), e.jailErr
	}
	return e.jails.kind(), e.jails.whyNoJail()
}

// Resolve applies the defaults to req, as the local executor does, and
// refuses a workspace that would put the home directory or the executor's
// own files within the commands' reach (a *bash.WorkspaceError).
func (e *Executor) Resolve(ctx context.Context, req bash.ExecRequest) (bash.ExecSpec, error) {
	spec, err := e.Executor.Resolve(ctx, req)
	if err != nil {
		return spec, err
	}
	if err := e.jails.admit(spec.Workspace); err != nil {
		return bash.ExecSpec{}, err
	}
	return spec, nil
}

// Check runs one command in a throwaway jail of its own, with a workspace
// of its own, then ends that jail, as New checks the sandbox before it
// returns: for a readiness probe. It never takes a warm jail. Calls may
// overlap; each has its own jail.
func (e *Executor) Check(ctx context.Context) error { return e.check(ctx) }

// checkOwner begins the owner token of a check's session, which never
// takes a warm jail.
const checkOwner = "dsh-sandbox-check"

// check runs one command in a throwaway jail (see New), with a workspace
// of its own: whether jails work here does not depend on the default one.
func (e *Executor) check(ctx context.Context) error {
	owner := checkOwner + "-" + strconv.FormatUint(e.checks.Add(1), 10)
	ws, err := os.MkdirTemp(e.tempDirs[0], "dsh-sandbox-check-")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer os.RemoveAll(ws)
	spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "exit 0", Owner: owner, Workspace: ws, Workdir: ws})
	if err == nil {
		var res bash.RunResult
		res, err = e.Run(ctx, spec)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("a test command exited %d", res.ExitCode)
		}
	}
	if cerr := e.EndOwner(ctx, owner); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// EndOwner ends every jail of the owner's session: the processes left in
// it are killed and its private /tmp is removed. The tool layer calls it
// when a session ends, after killing the session's tasks.
func (e *Executor) EndOwner(_ context.Context, owner string) error {
	err := e.jails.endOwner(owner)
	if e.egress != nil {
		e.egress.EndOwner(owner)
	}
	return err
}

// Close stops every command as the local executor does, then ends every
// jail.
func (e *Executor) Close() error {
	return errors.Join(e.Executor.Close(), e.jails.close())
}
