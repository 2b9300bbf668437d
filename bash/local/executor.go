package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dshgo/dsh/bash"
)

// Containment chooses how an executor keeps each command's processes together.
type Containment int

const (
	// ContainAuto uses a cgroup when the host allows one, else process groups.
	ContainAuto Containment = iota
	// ContainCgroup requires a cgroup; New fails without one.
	ContainCgroup
	// ContainProcessGroup uses process groups even where cgroups work.
	ContainProcessGroup
)

// Options configures an Executor. A nil *Options, and every zero field, means
// the default named on the field. Negative values are an error.
type Options struct {
	// Cwd is the working directory of a request that names none, and the
	// base of a relative one. Default: the process cwd at New.
	Cwd string
	// Timeout is the default foreground timeout. Default 120 s.
	Timeout time.Duration
	// MaxTimeout caps a requested timeout. Default 600 s (or Timeout, if
	// that is set higher); when only MaxTimeout is set below 120 s, Timeout
	// defaults to it. Setting both with Timeout above MaxTimeout is an error.
	MaxTimeout time.Duration
	// MaxOutputBytes is how much of each stream is kept in memory. Default
	// 64000.
	MaxOutputBytes int
	// Grace is how long SIGTERM is given before SIGKILL. Default 3 s.
	Grace time.Duration
	// ReapBound is how long a stopped command may take, after SIGKILL, to be
	// gone (its shell reaped, its processes exited, its output pipes
	// closed) before it is counted as ended anyway: its pipes are closed and
	// the timeout, Kill or Close that stopped it returns. It bounds the wait
	// for a process stuck in the kernel, or for one outside the command's
	// cgroup or process group that holds its output pipes. Like os/exec's
	// Cmd.WaitDelay. Default 2 s.
	ReapBound time.Duration
	// DrainDelay is how long a foreground run waits, after its shell exited,
	// for the pipes to close and the processes to end before it adopts what
	// is left as a background task. Default 250 ms.
	DrainDelay time.Duration
	// MaxTasksPerOwner and MaxTasks limit running background tasks (adopted
	// ones included), per owner token and in all. Defaults 16 and 64.
	MaxTasksPerOwner, MaxTasks int
	// MaxFinishedTasks is how many ended tasks are remembered; past it the
	// oldest is forgotten and its spill files removed. Default 256.
	MaxFinishedTasks int
	// SpillDir is where the executor's private spill directory is made.
	// Default: os.TempDir().
	SpillDir string
	// MaxSpillBytes caps one spill file; past it the file is withdrawn.
	// Default 1 GiB.
	MaxSpillBytes int64
	// SpillBudget caps all spill files on disk together. To make room, the
	// oldest complete files are evicted (a read no longer names them); a file
	// still being written is withdrawn only when no complete one is left to
	// evict. Default 4 GiB.
	SpillBudget int64
	// KeepSpillFiles leaves complete spill files on disk after Close (for a
	// one-shot CLI that prints their paths).
	KeepSpillFiles bool
	// Env holds extra "NAME=value" entries for every command, added after
	// the scrubbing and the overrides.
	Env []string
	// AllowEnv names variables passed through although they look like
	// credentials (by name or by value; see the package doc). It cannot name
	// BASH_ENV, ENV, SHELLOPTS, BASHOPTS or a BASH_FUNC_ variable, which
	// change what bash runs: New refuses that. Env can still set them.
	AllowEnv []string
	// BaseEnv replaces os.Environ() as the environment that is scrubbed.
	BaseEnv []string
	// Shell is the bash binary, a path or a name looked up in PATH.
	// Default "bash".
	Shell string
	// Containment picks cgroups or process groups. Default ContainAuto.
	Containment Containment
}

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
	nextListenerID int
}

var _ bash.Executor = (*Executor)(nil)

// task is a background (or adopted, or failed) task.
type task struct {
	id    bash.TaskID
	spec  bash.ExecSpec
	p     *proc         // nil when the spawn failed
	ready chan struct{} // closed once p is set (or the spawn failed)
	ended chan struct{} // closed once the final status is recorded

	// guarded by Executor.mu
	status   bash.TaskStatus
	exitCode int
	signal   string
	err      string
}

func (t *task) snapshot() bash.Task {
	return bash.Task{ID: t.id, Command: t.spec.Command, Status: t.status, ExitCode: t.exitCode,
		Signal: t.signal, Owner: t.spec.Owner, Err: t.err}
}

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
	return &Executor{
		cwd: o.Cwd, timeout: o.Timeout, max: o.MaxTimeout, maxOutput: o.MaxOutputBytes,
		grace: o.Grace, reapBound: o.ReapBound, drain: o.DrainDelay, perOwner: o.MaxTasksPerOwner, all: o.MaxTasks,
		maxFinished: o.MaxFinishedTasks, shell: shell,
		env:       commandEnv(base, o.AllowEnv, o.Env),
		cont:      cont,
		spill:     &spiller{parent: o.SpillDir, cap: o.MaxSpillBytes, budget: o.SpillBudget, keep: o.KeepSpillFiles},
		closing:   make(chan struct{}),
		tasks:     map[bash.TaskID]*task{},
		running:   map[string]int{},
		live:      map[*proc]struct{}{},
		listeners: map[int]func(bash.Task){},
	}, nil
}

func (o *Options) defaults() error {
	if err := o.validate(); err != nil {
		return err
	}
	o.fillDurations()
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&o.MaxOutputBytes, 64000)
	setInt(&o.MaxTasksPerOwner, 16)
	setInt(&o.MaxTasks, 64)
	setInt(&o.MaxFinishedTasks, 256)
	if o.MaxSpillBytes == 0 {
		o.MaxSpillBytes = 1 << 30
	}
	if o.SpillBudget == 0 {
		o.SpillBudget = 4 << 30
	}
	if o.Shell == "" {
		o.Shell = "bash"
	}
	if o.SpillDir == "" {
		o.SpillDir = os.TempDir()
	}
	if o.Timeout > o.MaxTimeout {
		return fmt.Errorf("invalid executor options: Timeout %v is above MaxTimeout %v", o.Timeout, o.MaxTimeout)
	}
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("find the working directory: %w", err)
		}
		o.Cwd = wd
	}
	abs, err := filepath.Abs(o.Cwd)
	if err != nil {
		return fmt.Errorf("invalid executor options: Cwd: %w", err)
	}
	o.Cwd = abs
	return nil
}

// validate reports every value that is out of range.
func (o *Options) validate() error {
	var bad []string
	neg := func(name string, v int64) {
		if v < 0 {
			bad = append(bad, fmt.Sprintf("%s must not be negative (got %d)", name, v))
		}
	}
	neg("Timeout", int64(o.Timeout))
	neg("MaxTimeout", int64(o.MaxTimeout))
	neg("MaxOutputBytes", int64(o.MaxOutputBytes))
	neg("Grace", int64(o.Grace))
	neg("ReapBound", int64(o.ReapBound))
	neg("DrainDelay", int64(o.DrainDelay))
	neg("MaxTasksPerOwner", int64(o.MaxTasksPerOwner))
	neg("MaxTasks", int64(o.MaxTasks))
	neg("MaxFinishedTasks", int64(o.MaxFinishedTasks))
	neg("MaxSpillBytes", o.MaxSpillBytes)
	neg("SpillBudget", o.SpillBudget)
	if o.Containment < ContainAuto || o.Containment > ContainProcessGroup {
		bad = append(bad, fmt.Sprintf("Containment %d is not one of the defined values", o.Containment))
	}
	if err := checkAllowEnv(o.AllowEnv); err != nil {
		bad = append(bad, err.Error())
	}
	for _, kv := range o.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			bad = append(bad, fmt.Sprintf("Env entry %q is not NAME=value", kv))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("invalid executor options: %s", strings.Join(bad, "; "))
	}
	return nil
}

// fillDurations sets the durations left at zero.
func (o *Options) fillDurations() {
	set := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	// A default left unset follows a maximum that was set, and the other
	// way round; only two set values can contradict each other.
	switch {
	case o.Timeout == 0 && o.MaxTimeout != 0:
		o.Timeout = min(120*time.Second, o.MaxTimeout)
	case o.MaxTimeout == 0 && o.Timeout != 0:
		o.MaxTimeout = max(600*time.Second, o.Timeout)
	}
	set(&o.Timeout, 120*time.Second)
	set(&o.MaxTimeout, 600*time.Second)
	set(&o.Grace, 3*time.Second)
	set(&o.ReapBound, 2*time.Second)
	set(&o.DrainDelay, 250*time.Millisecond)
}

// Containment reports how this executor contains commands: "cgroup" or
// "process group".
func (e *Executor) Containment() string { return e.cont.kind() }

// Resolve applies the defaults to req.
func (e *Executor) Resolve(req bash.ExecRequest) (bash.ExecSpec, error) {
	if strings.TrimSpace(req.Command) == "" {
		return bash.ExecSpec{}, errors.New("the command is empty")
	}
	if err := checkCommand(req.Command); err != nil {
		return bash.ExecSpec{}, err
	}
	if req.Timeout < 0 {
		return bash.ExecSpec{}, fmt.Errorf("the timeout must be positive, got %v", req.Timeout)
	}
	spec := bash.ExecSpec{Command: req.Command, Workdir: e.cwd, Timeout: e.timeout, Owner: req.Owner}
	if req.Workdir != "" {
		spec.Workdir = req.Workdir
		if !filepath.IsAbs(spec.Workdir) {
			spec.Workdir = filepath.Join(e.cwd, spec.Workdir)
		}
		spec.Workdir = filepath.Clean(spec.Workdir)
	}
	if req.Timeout > 0 {
		spec.Timeout = min(req.Timeout, e.max)
	}
	return spec, nil
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
func (e *Executor) start(spec bash.ExecSpec, linger time.Duration) (*proc, error) {
	if err := e.begin(); err != nil {
		return nil, err
	}
	p, err := e.spawn(spec, linger)
	if err != nil {
		e.wg.Add(-procGoroutines)
		return nil, err
	}
	e.track(p, true)
	return p, nil
}

// Run runs spec in the foreground. See bash.Executor.
func (e *Executor) Run(ctx context.Context, spec bash.ExecSpec) (bash.RunResult, error) {
	if err := ctx.Err(); err != nil {
		return bash.RunResult{}, fmt.Errorf("%w before it started: %w", bash.ErrAborted, err)
	}
	if spec.Timeout <= 0 {
		return bash.RunResult{}, errors.New("the spec has no timeout: resolve the request first")
	}
	p, err := e.start(spec, e.drain)
	if err != nil {
		return bash.RunResult{}, err
	}
	res := bash.RunResult{Timeout: spec.Timeout}
	timer := time.NewTimer(spec.Timeout)
	defer timer.Stop()
	timerC, ctxDone, closing, lingering := timer.C, ctx.Done(), e.closing, p.lingering
wait:
	for {
		select {
		case <-p.done:
			break wait
		case <-lingering:
			// The shell exited a drain delay ago and processes remain.
			lingering = nil
			if !p.stopping() {
				p.mute() // what comes now belongs to the adopted task
				e.adopt(p, spec, &res)
				break wait
			}
		case <-timerC:
			timerC = nil
			if !isClosed(p.shellDone) { // an exited command is not timed out
				res.TimedOut = true
				p.stop()
			}
		case <-ctxDone:
			ctxDone = nil
			res.Aborted = true
			p.stop()
		case <-closing:
			closing = nil
			p.stop()
		}
	}
	p.mute()
	if res.Adopted == "" {
		res.Stdout, res.Stderr = p.out.tail(false), p.errs.tail(false)
		e.track(p, false)
	}
	res.ExitCode, res.Signal = exitStatus(p)
	switch {
	case res.Aborted:
		return res, fmt.Errorf("%w: %w", bash.ErrAborted, context.Cause(ctx))
	case p.stopping() && !res.TimedOut && !res.LeftoversKilled:
		return res, fmt.Errorf("the command was stopped: %w", bash.ErrClosed)
	}
	return res, nil
}

// adopt turns the processes a foreground command left behind into a
// background task of the same owner, or kills them when the owner is at its
// task limit.
func (e *Executor) adopt(p *proc, spec bash.ExecSpec, res *bash.RunResult) {
	t, err := e.reserve(spec)
	if err != nil {
		res.LeftoversKilled = true
		p.stop()
		<-p.done
		return
	}
	// The result takes what was printed so far; the task's reads go on from
	// there.
	res.Stdout, res.Stderr = p.out.tail(true), p.errs.tail(true)
	res.Adopted = t.id
	e.launched(t, p)
}

// reserve checks the limits and registers a running task with no proc yet.
func (e *Executor) reserve(spec bash.ExecSpec) (*task, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, bash.ErrClosed
	}
	if e.running[spec.Owner] >= e.perOwner {
		return nil, fmt.Errorf("%w: this session already runs %d background tasks, the most it may; stop one with bash_kill first", bash.ErrTaskLimit, e.perOwner)
	}
	if e.runningAll >= e.all {
		return nil, fmt.Errorf("%w: %d background tasks are running, the most this executor allows; stop one with bash_kill first", bash.ErrTaskLimit, e.all)
	}
	e.seq++
	t := &task{id: bash.TaskID("bash-" + strconv.Itoa(e.seq)), spec: spec, status: bash.StatusRunning,
		ready: make(chan struct{}), ended: make(chan struct{})}
	e.tasks[t.id] = t
	e.order = append(e.order, t)
	e.running[spec.Owner]++
	e.runningAll++
	e.wg.Add(1) // the finisher, started by launched or failed
	return t, nil
}

// launched attaches a running proc to its task and starts its finisher.
func (e *Executor) launched(t *task, p *proc) {
	t.p = p
	close(t.ready)
	go func() {
		defer e.wg.Done()
		<-p.done
		code, sig := exitStatus(p)
		status := bash.StatusCompleted
		if p.stopping() || sig != "" {
			status = bash.StatusKilled
		}
		e.finish(t, status, code, sig, "")
		e.track(p, false)
	}()
}

// failed records a task whose command could not start.
func (e *Executor) failed(t *task, err error) {
	close(t.ready)
	e.finish(t, bash.StatusFailed, -1, "", err.Error())
	e.wg.Done()
}

// finish records a task's end, forgets the oldest ended tasks past the
// limit, and calls the listeners.
func (e *Executor) finish(t *task, status bash.TaskStatus, code int, sig, msg string) {
	e.mu.Lock()
	t.status, t.exitCode, t.signal, t.err = status, code, sig, msg
	e.running[t.spec.Owner]--
	if e.running[t.spec.Owner] == 0 {
		delete(e.running, t.spec.Owner)
	}
	e.runningAll--
	e.finished++
	var forget []*task
	for i := 0; e.finished > e.maxFinished && i < len(e.order); {
		old := e.order[i]
		if old.status == bash.StatusRunning {
			i++
			continue
		}
		e.order = slices.Delete(e.order, i, i+1)
		delete(e.tasks, old.id)
		e.finished--
		forget = append(forget, old)
	}
	var call []func(bash.Task)
	if !e.closed {
		for _, id := range slices.Sorted(maps.Keys(e.listeners)) {
			call = append(call, e.listeners[id])
		}
	}
	snap := t.snapshot()
	e.mu.Unlock()
	for _, old := range forget {
		if old.p != nil {
			old.p.out.release()
			old.p.errs.release()
		}
	}
	for _, fn := range call {
		callListener(fn, snap)
	}
	// Only now: a Kill that returns has let every listener hear of the end.
	close(t.ended)
}

func callListener(fn func(bash.Task), t bash.Task) {
	defer func() { _ = recover() }() // a listener's panic is its own; the others still run
	fn(t)
}

// exitStatus reads the shell's exit code and signal.
func exitStatus(p *proc) (int, string) {
	if p.state == nil {
		return -1, ""
	}
	return p.state.ExitCode(), signalName(p.state)
}

// Start runs spec in the background. See bash.Executor. When the command
// cannot start, the error comes with the failed task, which listeners hear of.
func (e *Executor) Start(spec bash.ExecSpec) (bash.Task, error) {
	t, err := e.reserve(spec)
	if err != nil {
		return bash.Task{}, err
	}
	p, err := e.start(spec, 0)
	if err != nil {
		e.failed(t, err)
		return e.snap(t), fmt.Errorf("background task %s could not start: %w", t.id, err)
	}
	e.launched(t, p)
	return e.snap(t), nil
}

func (e *Executor) snap(t *task) bash.Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	return t.snapshot()
}

func (e *Executor) lookup(id bash.TaskID) (*task, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tasks[id]
	if !ok {
		return nil, &bash.UnknownTaskError{ID: id}
	}
	return t, nil
}

// Get returns a snapshot of the task.
func (e *Executor) Get(id bash.TaskID) (bash.Task, error) {
	t, err := e.lookup(id)
	if err != nil {
		return bash.Task{}, err
	}
	return e.snap(t), nil
}

// List returns every remembered task, oldest first.
func (e *Executor) List() []bash.Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]bash.Task, len(e.order))
	for i, t := range e.order {
		out[i] = t.snapshot()
	}
	return out
}

// OwnerOf returns the owner token stored on the task at spawn.
func (e *Executor) OwnerOf(id bash.TaskID) (string, error) {
	t, err := e.lookup(id)
	if err != nil {
		return "", err
	}
	return t.spec.Owner, nil
}

// ReadOutput returns what the task printed since the previous read.
func (e *Executor) ReadOutput(id bash.TaskID) (bash.TaskRead, error) {
	t, err := e.lookup(id)
	if err != nil {
		return bash.TaskRead{}, err
	}
	<-t.ready
	// The status is taken first: if it says ended, the streams are complete.
	r := bash.TaskRead{Task: e.snap(t)}
	if t.p != nil {
		r.Stdout, r.Stderr = t.p.out.next(), t.p.errs.next()
	}
	return r, nil
}

// Kill stops the task and its whole process tree and waits until it has
// ended, and the listeners have been told, or ctx is done. It returns false
// when the task had already ended.
func (e *Executor) Kill(ctx context.Context, id bash.TaskID) (bool, error) {
	t, err := e.lookup(id)
	if err != nil {
		return false, err
	}
	<-t.ready
	if t.p == nil {
		return false, nil
	}
	select {
	case <-t.p.done:
		return false, nil
	default:
	}
	t.p.stop()
	select {
	case <-t.ended:
		return true, nil
	case <-ctx.Done():
		return true, fmt.Errorf("task %s is still being stopped: %w", id, context.Cause(ctx))
	}
}

// OnTaskDone registers fn for every task that ends from now on. fn runs on
// an executor goroutine and must not call Close.
func (e *Executor) OnTaskDone(fn func(bash.Task)) (unsubscribe func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return func() {}
	}
	id := e.nextListenerID
	e.nextListenerID++
	e.listeners[id] = fn
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.listeners, id)
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
		for p := range e.live {
			p.stop()
		}
		e.mu.Unlock()
		e.wg.Wait()
		e.closeErr = errors.Join(e.cont.close(), e.spill.close())
	})
	return e.closeErr
}
