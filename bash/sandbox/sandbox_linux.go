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
	afterStart       func(int) // Options.afterStart
	egress           Egress    // Options.Egress
	layer            Layer     // LayerJail or LayerLandlock
	noJail           error     // why LayerAuto chose the Landlock layer at once
	rootOnce         sync.Once // the Landlock layer's sessions' temporary directories
	root             string
	rootErr          error

	mu       sync.Mutex
	byKey    map[string]*jail
	closed   bool
	fenceErr string // why the last jail could not be fenced, if it could not
}

// noteFenceErr records why a jail could not be fenced, for View.
func (js *jails) noteFenceErr(why string) {
	js.mu.Lock()
	js.fenceErr = why
	js.mu.Unlock()
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
	return &jails{noFence: o.noFence, afterStart: o.afterStart, egress: o.Egress, allowUnsandboxed: o.AllowUnsandboxed, layer: layer, noJail: noJail, policy: o.Policy, bwrap: bw, agent: agent, filter: filters, layerFilter: layerFilters, tempDir: o.TempDir, serverTemp: serverTemp,
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

// get returns the session's jail, starting it if there is none. Concurrent
// callers of one session wait for the same start.
func (js *jails) get(ctx context.Context, req *local.SpawnRequest) (*jail, error) {
	if err := js.admit(req.Workspace); err != nil {
		return nil, err // a spec not made by Resolve
	}
	key := jailKey(req.Owner, req.Workspace)
	js.mu.Lock()
	if js.closed {
		js.mu.Unlock()
		return nil, errJailGone
	}
	j := js.byKey[key]
	if j == nil {
		j = newJail(key, req.Owner)
		j.afterStart = js.afterStart
		js.byKey[key] = j
		js.mu.Unlock()
		err := js.startJail(ctx, j, req)
		j.startFinished(err)
		if err != nil {
			_ = js.drop(j) // the start's error says more
			return nil, fmt.Errorf("start the session's sandbox: %w", err)
		}
		return j, nil
	}
	js.mu.Unlock()
	select {
	case <-j.startDone:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if j.startErr != nil {
		return nil, fmt.Errorf("start the session's sandbox: %w", j.startErr)
	}
	return j, nil
}

func newJail(key, owner string) *jail {
	return &jail{key: key, owner: owner, ready: make(chan struct{}), gone: make(chan struct{}),
		readDone: make(chan struct{}), exited: make(chan struct{}), startDone: make(chan struct{}),
		waiters: map[uint64]*waiter{}}
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

// endOwner closes every jail of owner.
func (js *jails) endOwner(owner string) error {
	js.mu.Lock()
	var end []*jail
	for _, j := range js.byKey {
		if j.owner == owner {
			end = append(end, j)
		}
	}
	js.mu.Unlock()
	var errs []error
	for _, j := range end {
		<-j.startDone
		errs = append(errs, js.drop(j))
	}
	return errors.Join(errs...)
}

// close closes every jail and removes the jails' directory.
func (js *jails) close() error {
	js.mu.Lock()
	js.closed = true
	all := js.byKey
	js.byKey = map[string]*jail{}
	js.mu.Unlock()
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
