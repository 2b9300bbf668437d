package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/permission"
)

// Executor runs commands as local subprocesses. It implements bash.Executor.
// Make one with New; the zero value is not usable. Close it when done.
type Executor struct {
	cwd            string
	timeout, max   time.Duration
	maxOutput      int
	grace, drain   time.Duration
	reapBound      time.Duration
	perOwner, all  int
	maxFinished    int
	shell          string
	spawnFn        SpawnFunc
	execRules      atomic.Pointer[permission.ExecRules] // Options.ExecRules, SetExecRules
	noInputProbe   bool
	env            []string
	cont           containment
	spill          *spiller
	wg             sync.WaitGroup // every goroutine the executor starts, listener calls included
	closing        chan struct{}
	closeOnce      sync.Once
	closeErr       error
	mu             sync.Mutex
	closed         bool
	seq            int
	tasks          map[bash.TaskID]*task
	order          []*task // remembered tasks, oldest first
	finished       int     // how many of them have ended
	running        map[string]int
	runningAll     int
	live           map[*proc]struct{}
	listeners      map[int]func(bash.Task)
	waitListeners  map[int]func(bash.Task) // OnTaskWaiting's
	nextListenerID int
}

var _ bash.Executor = (*Executor)(nil)

// New makes an executor. opts may be nil.
func New(opts *Options) (*Executor, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if err := o.defaults(); err != nil {
		return nil, err
	}
	shell, err := exec.LookPath(o.Shell)
	if err != nil {
		return nil, fmt.Errorf("find bash: %w", err)
	}
	cont, err := newContainment(o.Containment)
	if err != nil {
		return nil, fmt.Errorf("contain commands: %w", err)
	}
	base := o.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	e := &Executor{
		cwd: o.Cwd, timeout: o.Timeout, max: o.MaxTimeout, maxOutput: o.MaxOutputBytes,
		grace: o.Grace, reapBound: o.ReapBound, drain: o.DrainDelay, perOwner: o.MaxTasksPerOwner, all: o.MaxTasks,
		maxFinished: o.MaxFinishedTasks, shell: shell, spawnFn: o.Spawn, noInputProbe: o.NoInputProbe,
		env:           commandEnv(base, o.AllowEnv, o.Env),
		cont:          cont,
		spill:         &spiller{parent: o.SpillDir, cap: o.MaxSpillBytes, budget: o.SpillBudget, keep: o.KeepSpillFiles},
		closing:       make(chan struct{}),
		tasks:         map[bash.TaskID]*task{},
		running:       map[string]int{},
		live:          map[*proc]struct{}{},
		listeners:     map[int]func(bash.Task){},
		waitListeners: map[int]func(bash.Task){},
	}
	e.execRules.Store(o.ExecRules)
	return e, nil
}

// SetExecRules replaces the deny rules enforced at exec (Options.ExecRules)
// for the commands started from now on; nil: none. A far side gets its
// rules this way from the server it serves (bash/remote).
func (e *Executor) SetExecRules(r *permission.ExecRules) { e.execRules.Store(r) }

// Env is the environment the executor's commands get (SpawnRequest.Env):
// scrubbed, with Options.Env added (a new slice each time). A sandbox
// starts the jails of its warm pool with it, before any command asks.
func (e *Executor) Env() []string { return slices.Clone(e.env) }

// Containment reports how this executor contains commands: ContainCgroup
// or ContainProcessGroup.
func (e *Executor) Containment() Containment { return e.cont.kind() }

// SpillDir is the path of the executor's spill directory, the one its spill
// paths name, or "" while it has made none. With Options.KeepSpillFiles, it
// stays after Close while it holds a file (see CleanKept).
func (e *Executor) SpillDir() string { return e.spill.dir() }

// HoldSpillDir returns the private directory that holds owner's spill files,
// making it if needed, and keeps it, even while it holds no file, until
// release is called (or the executor is closed). A sandbox binds it into the
// owner's jail at the same path, so that the paths a read names are the
// paths the owner's commands can read.
func (e *Executor) HoldSpillDir(owner string) (dir string, release func(), err error) {
	return e.spill.hold(owner)
}

// Resolve applies the defaults to req.
func (e *Executor) Resolve(_ context.Context, req bash.ExecRequest) (bash.ExecSpec, error) {
	if strings.TrimSpace(req.Command) == "" {
		return bash.ExecSpec{}, &bash.CommandError{Problem: bash.ErrEmptyCommand}
	}
	if err := checkCommand(req.Command); err != nil {
		return bash.ExecSpec{}, err
	}
	if req.Timeout < 0 {
		return bash.ExecSpec{}, &bash.TimeoutError{Timeout: req.Timeout}
	}
	spec := bash.ExecSpec{Command: req.Command, Workdir: e.cwd, Timeout: e.timeout, Owner: req.Owner, Workspace: e.cwd}
	if req.Workspace != "" {
		spec.Workspace = e.abs(req.Workspace)
	}
	if req.Workdir != "" {
		spec.Workdir = e.abs(req.Workdir)
	}
	if req.Timeout > 0 {
		spec.Timeout = min(req.Timeout, e.max)
	}
	return spec, nil
}

// abs resolves dir against the default directory.
func (e *Executor) abs(dir string) string {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(e.cwd, dir)
	}
	return filepath.Clean(dir)
}

// begin counts a new proc's goroutines, unless the executor is closed.
func (e *Executor) begin() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return bash.ErrClosed
	}
	e.wg.Add(procGoroutines)
	return nil
}

func (e *Executor) track(p *proc, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if on {
		e.live[p] = struct{}{}
		if e.closed {
			p.stop()
		}
	} else {
		delete(e.live, p)
	}
}

// start spawns a proc; linger > 0 makes it a foreground one (see
// proc.lingering).
func (e *Executor) start(ctx context.Context, spec bash.ExecSpec, linger time.Duration) (*proc, error) {
	if err := e.begin(); err != nil {
		return nil, err
	}
	p, err := e.spawn(ctx, spec, linger)
	if err != nil {
		e.wg.Add(-procGoroutines)
		return nil, err
	}
	e.track(p, true)
	return p, nil
}

// OnTaskDone registers fn for every task that ends from now on. fn runs on
// an executor goroutine and must not call Close.
func (e *Executor) OnTaskDone(fn func(bash.Task)) (unsubscribe func()) {
	return e.subscribe(e.listeners, fn)
}

// subscribe adds fn to set, one of the executor's sets of listeners,
// unless the executor is closed, and returns what removes it.
func (e *Executor) subscribe(set map[int]func(bash.Task), fn func(bash.Task)) (unsubscribe func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return func() {}
	}
	id := e.nextListenerID
	e.nextListenerID++
	set[id] = fn
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(set, id)
	}
}

// Close stops every command, waits until all their processes are gone,
// removes the spill files (unless KeepSpillFiles) and the executor's cgroup.
// No listener is called once Close has begun. Close is idempotent.
func (e *Executor) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		close(e.closing)
		clear(e.listeners)
		clear(e.waitListeners)
		for p := range e.live {
			p.stop()
		}
		e.mu.Unlock()
		e.wg.Wait()
		e.closeErr = errors.Join(e.cont.close(), e.spill.close())
	})
	return e.closeErr
}
