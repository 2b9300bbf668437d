package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/permission"
	"golang.org/x/sys/unix"
)

// jails keeps one jail per session (owner token and workspace).
type jails struct {
	policy      Policy
	bwrap       string
	agent       string
	filter      [2][]byte // the jail's seccomp filter, [1] for a jail whose agent traces
	layerFilter [2][]byte // the Landlock layer's
	tempDir     string
	// serverTemp are the executor's temporary directories, hidden in
	// every jail (see jailPaths).
	serverTemp []string
	// startTimeout bounds a jail's start (Options.StartTimeout).
	startTimeout time.Duration
	// limits puts each jail in cgroups with the session's limits;
	// limitsErr says why some limit cannot apply here.
	limits    *limiter
	limitsErr error

	hold  func(owner string) (string, func(), error)
	admit func(workspace string) error // refuses a workspace (checkWorkspace)

	allowUnsandboxed bool      // Options.AllowUnsandboxed
	noFence          bool      // Options.noFence
	noClone3Guard    bool      // Options.noClone3Guard
	afterStart       func(int) // Options.afterStart
	egress           Egress    // Options.Egress
	layer            Layer     // LayerJail or LayerLandlock
	noJail           error     // why LayerAuto chose the Landlock layer at once
	rootOnce         sync.Once // the Landlock layer's sessions' temporary directories
	root             string
	rootErr          error
	observe          observe.Sink                     // Options.Observe
	logf             func(format string, args ...any) // Options.Logf, never nil
	// systemHidden are the hidden system paths, their links resolved
	// once (jailPaths.systemHidden).
	systemHidden []string

	mu       sync.Mutex
	byKey    map[string]*jail
	pool     *pool // the warm jails (Options.Warm); nil: none
	spawner  spawner
	closed   bool
	fenceErr string // why the last jail could not be fenced, if it could not
	// usernsErr: why the last Landlock-layer agent could not keep its
	// commands from making user namespaces, if it could not.
	usernsErr string
}

// noteAgentErrs records, for View, what j's agent said it could not do:
// fence the jail, or keep its commands from making user namespaces.
func (js *jails) noteAgentErrs(j *jail) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if j.fenceErr != "" {
		js.fenceErr = j.fenceErr
	}
	if j.usernsErr != "" {
		js.usernsErr = j.usernsErr
	}
}

func newJails(o *Options, serverTemp []string, hold func(string) (string, func(), error), admit func(string) error) (*jails, error) {
	layer := o.Layer
	var noJail error // why LayerAuto is the Landlock layer
	bw, err := exec.LookPath(o.Bwrap)
	switch {
	case err == nil && layer != LayerLandlock:
		layer = LayerJail
	case layer == LayerJail:
		return nil, fmt.Errorf("%w: bwrap (Debian and Ubuntu: apt install bubblewrap): %w", ErrUnavailable, err)
	default:
		layer = LayerLandlock
		if o.Layer == LayerAuto {
			noJail = fmt.Errorf("no bwrap (Debian and Ubuntu: apt install bubblewrap): %w", err)
		}
	}
	if err := checkEgress(o, layer); err != nil {
		return nil, err
	}
	if layer == LayerLandlock && landlockABI() < 1 {
		return nil, fmt.Errorf("%w: neither bubblewrap (%v) nor Landlock (this kernel has none, or it is not enabled) works here", ErrUnavailable, err)
	}
	agent := o.Agent
	if agent == "" {
		if agent, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the agent binary: %w", err)
		}
	}
	var filters, layerFilters [2][]byte // [traced]: see jailFiles
	for i, tracer := range []bool{false, true} {
		if filters[i], err = filterBytes(filterOpts{tracer: tracer}); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if layerFilters[i], err = filterBytes(filterOpts{landlock: true, networkOff: o.Policy.Network == NetworkOff, tracer: tracer}); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	startTimeout := o.StartTimeout
	if startTimeout <= 0 {
		startTimeout = 30 * time.Second
	}
	limits, limitsErr := newLimiter(o.Limits)
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &jails{systemHidden: realPaths(hiddenSystemPaths), observe: o.Observe, logf: logf, noFence: o.noFence, noClone3Guard: o.noClone3Guard, afterStart: o.afterStart, egress: o.Egress, allowUnsandboxed: o.AllowUnsandboxed, layer: layer, noJail: noJail, policy: o.Policy, bwrap: bw, agent: agent, filter: filters, layerFilter: layerFilters, tempDir: o.TempDir, serverTemp: serverTemp,
		startTimeout: startTimeout, limits: limits, limitsErr: limitsErr, hold: hold, admit: admit, byKey: map[string]*jail{}}, nil
}

// checkEgress refuses a NetworkAllowlist without its proxy, or in the
// Landlock layer, and forwards without it, or that cannot be.
func checkEgress(o *Options, layer Layer) error {
	if err := checkForwardsOf(o); err != nil {
		return err
	}
	switch {
	case o.Policy.Network != NetworkAllowlist:
		return nil
	case o.Egress == nil:
		return errors.New("sandbox: NetworkAllowlist needs Options.Egress")
	case layer == LayerLandlock:
		return fmt.Errorf("%w: %w", ErrUnavailable, errAllowlistNeedsJail)
	}
	return nil
}

func jailKey(owner, workspace string) string { return owner + "\x00" + workspace }

// spawn is the local executor's SpawnFunc: it starts the shell in the
// session's jail, starting the jail first if needed, or again if it died.
func (js *jails) spawn(ctx context.Context, req *local.SpawnRequest) (local.Process, error) {
	if req.Unsandboxed {
		if !js.allowUnsandboxed {
			return nil, bash.ErrSandboxFinal
		}
		return local.SpawnExec(ctx, req) // the user said yes to this call
	}
	for try := 0; ; try++ {
		j, err := js.get(ctx, req)
		if err != nil {
			return nil, err
		}
		p, err := j.spawn(req)
		if errors.Is(err, errJailGone) && try == 0 {
			_ = js.drop(j) // it is gone already; a new one is started
			continue
		}
		return p, err
	}
}

// get returns the session's jail, starting it (or claiming a warm one) if
// there is none. Concurrent callers of one session wait for the same.
func (js *jails) get(ctx context.Context, req *local.SpawnRequest) (*jail, error) {
	if err := js.admit(req.Workspace); err != nil {
		return nil, err // a spec not made by Resolve
	}
	key := jailKey(req.Owner, req.Workspace)
	for {
		js.mu.Lock()
		j, closed, p := js.byKey[key], js.closed, js.pool
		js.mu.Unlock()
		if closed {
			return nil, errJailGone
		}
		if j == nil {
			if j = js.newSessionJail(key, req, p); j == nil {
				continue // another call of the session was first
			}
			return js.begin(ctx, j, req)
		}
		select {
		case <-j.startDone:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if errors.Is(j.startErr, errStartAgain) {
			continue // the warm jail it waited for failed its claim
		}
		if j.startErr != nil {
			return nil, fmt.Errorf("start the session's sandbox: %w", j.startErr)
		}
		return j, nil
	}
}

// errStartAgain ends the start of a warm jail whose claim failed: the
// session's calls that waited for it look again (its first call starts
// a jail for it meanwhile).
var errStartAgain = errors.New("the warm sandbox could not be claimed")

// newSessionJail makes the session's jail, a warm one from p if it has
// one for the session (a check's session never takes one), and enters it
// as the session's; nil when another call of the session entered one
// first.
func (js *jails) newSessionJail(key string, req *local.SpawnRequest, p *pool) *jail {
	var j *jail
	if p != nil && !strings.HasPrefix(req.Owner, checkOwner) {
		j = p.take(js.template(req.Env, len(req.ExecRules.Patterns()) > 0))
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.byKey[key] != nil || js.closed {
		if j != nil {
			p.putBack(j) // untouched: no session claimed it
		}
		return nil
	}
	if j == nil {
		j = newJail(key, req.Owner)
	}
	j.key, j.owner, j.afterStart = key, req.Owner, js.afterStart
	js.byKey[key] = j
	return j
}

// begin starts the session's jail j, which is the session's in byKey:
// claims it, when it is a warm one, else starts it. A warm one whose claim
// fails is closed, and a new jail started in its place.
func (js *jails) begin(ctx context.Context, j *jail, req *local.SpawnRequest) (*jail, error) {
	start := time.Now()
	if j.claimed != nil {
		err := js.claimJail(ctx, j, req)
		js.emitStart(req.Owner, true, start, err)
		if err == nil {
			j.startFinished(nil)
			return j, nil
		}
		js.logf("a warm sandbox could not be claimed (a new one starts instead): %v", err)
		if j = js.replace(j); j == nil {
			return nil, fmt.Errorf("start the session's sandbox: %w", errJailGone)
		}
		start = time.Now()
	}
	err := js.startJail(ctx, j, req)
	js.emitStart(req.Owner, false, start, err)
	j.startFinished(err)
	if err != nil {
		_ = js.drop(j) // the start's error says more
		return nil, fmt.Errorf("start the session's sandbox: %w", err)
	}
	return j, nil
}

// replace closes the warm jail j whose claim failed and puts a new jail
// in its place as the session's, which it returns; nil when j is no
// longer the session's (the session or the executor ended meanwhile).
func (js *jails) replace(j *jail) *jail {
	fresh := newJail(j.key, j.owner)
	fresh.afterStart = js.afterStart
	js.mu.Lock()
	ours := js.byKey[j.key] == j && !js.closed
	if ours {
		js.byKey[j.key] = fresh
	}
	js.mu.Unlock()
	j.startFinished(errStartAgain)
	_ = j.close()
	if !ours {
		return nil
	}
	return fresh
}

// emitStart tells Options.Observe of a jail's start (owner "": for the
// warm pool), or a warm one's claim (pooled).
func (js *jails) emitStart(owner string, pooled bool, start time.Time, err error) {
	if js.observe == nil {
		return
	}
	ev := &observe.JailStart{Time: start, Session: observe.SessionName(owner), Layer: "jail", Pooled: pooled, Duration: time.Since(start)}
	if js.layer == LayerLandlock {
		ev.Layer = "landlock layer"
	}
	if err != nil {
		ev.Err = err.Error()
	}
	js.observe.Emit(ev)
}

func newJail(key, owner string) *jail {
	return &jail{key: key, owner: owner, ready: make(chan struct{}), gone: make(chan struct{}),
		readDone: make(chan struct{}), exited: make(chan struct{}), startDone: make(chan struct{}),
		waiters: map[uint64]*waiter{}, mntns: -1, stderr: &capBuffer{max: 4 << 10}}
}

// started records the end of the jail's start.
func (j *jail) startFinished(err error) {
	j.startErr = err
	if err != nil {
		j.fail(err)
	}
	close(j.startDone)
}

// drop forgets a jail and closes it.
func (js *jails) drop(j *jail) error {
	js.mu.Lock()
	if js.byKey[j.key] == j {
		delete(js.byKey, j.key)
	}
	js.mu.Unlock()
	return j.close()
}

// endOwner closes every jail of owner: those a call of the session is
// starting too, and one that takes the place of a warm jail whose claim
// failed meanwhile.
func (js *jails) endOwner(owner string) error {
	var errs []error
	for {
		js.mu.Lock()
		var end []*jail
		for _, j := range js.byKey {
			if j.owner == owner {
				end = append(end, j)
			}
		}
		js.mu.Unlock()
		if len(end) == 0 {
			return errors.Join(errs...)
		}
		for _, j := range end {
			<-j.startDone
			errs = append(errs, js.drop(j))
		}
	}
}

// close closes the warm jails and every session's, and removes the
// jails' directory.
func (js *jails) close() error {
	js.mu.Lock()
	js.closed = true
	all, p := js.byKey, js.pool
	js.byKey = map[string]*jail{}
	js.mu.Unlock()
	if p != nil {
		p.close()
	}
	var wg sync.WaitGroup
	errs := make([]error, len(all), len(all)+1) // one slot per jail, written by its closer
	i := 0
	for _, j := range all {
		slot := i
		i++
		wg.Go(func() {
			<-j.startDone
			errs[slot] = j.close()
		})
	}
	wg.Wait()
	js.spawner.close() // after every jail it started
	errs = append(errs, js.limits.close())
	if js.root != "" {
		errs = append(errs, removeTree(js.root))
	}
	return errors.Join(errs...)
}

// envPath is the PATH of an environment.
func envPath(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return ""
}

// startPool starts the warm pool of o.Warm jails (none for 0), for sessions
// whose commands have the executor's environment and deny rules; with
// check, it first claims one warm jail itself, so that a pool that cannot
// work here fails New.
func (e *Executor) startPool(ctx context.Context, o *Options, rules *permission.ExecRules, check bool) error {
	if o.Warm == 0 {
		return nil
	}
	js := e.jails
	t := js.template(e.Executor.Env(), len(rules.Patterns()) > 0)
	if check {
		if err := js.checkClaim(ctx, t, rules); err != nil {
			hint := ""
			if errors.Is(err, unix.EPERM) && js.layer == LayerJail {
				hint = " (a pool of jails needs a server run as root, which binds each session's workspace into its warm jail; without root, use the Landlock layer's pool, or none)"
			}
			return fmt.Errorf("sandbox: the warm pool cannot work here: %w%s", err, hint)
		}
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if !js.closed {
		js.pool = newPool(js, o, t, js.logf)
	}
	return nil
}

// checkClaim starts a warm jail and claims it for a session of its own.
func (js *jails) checkClaim(ctx context.Context, t poolTemplate, rules *permission.ExecRules) error {
	ws, err := os.MkdirTemp(js.serverTemp[0], "dsh-sandbox-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	j, err := js.startIdle(ctx, t)
	if err != nil {
		return err
	}
	j.owner = "dsh-sandbox-check-warm"
	err = js.claimJail(ctx, j, &local.SpawnRequest{Owner: j.owner, Workspace: ws, Env: t.env, ExecRules: rules})
	err = errors.Join(err, j.close())
	if js.egress != nil {
		js.egress.EndOwner(j.owner)
	}
	return err
}

// poolStatus is Executor.PoolStatus.
func (js *jails) poolStatus() (ready, target int) {
	js.mu.Lock()
	p := js.pool
	js.mu.Unlock()
	if p == nil {
		return 0, 0
	}
	return p.status()
}
