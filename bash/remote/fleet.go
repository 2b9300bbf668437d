package remote

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dshgo/dsh/bash"
)

// Host is one machine of a Fleet: how to reach its `dsh-bash executor`.
type Host struct {
	// Dial opens a stream to the host's executor (SSH.Dial, Command.Dial).
	Dial DialFunc
	// Options configure the host's Executor; Host names it in errors.
	Options Options
	// Dialled, for a per-session fleet, is the host's Executor already
	// dialled with Dial and Options (a warm pod's, whose handshake is
	// done), used instead of a new one. Nil: one is made on first use.
	Dialled *Executor
}

// Fleet is a bash.Executor that spreads sessions over several far sides.
// Each owner token (session) is placed on one host and stays there for
// its life: its tasks, its files and its spill paths are that host's. Task
// ids are the fleet's own, bash-1, bash-2, …, unique across hosts;
// ownership and notices work as on one executor, except that the limit on
// all tasks is each host's. A host that fails fails only its own
// sessions' calls, with a *bash.LinkError naming it.
//
// A fleet of NewFleet has fixed hosts and places a new session on the
// healthy one running the fewest tasks; new sessions go to the hosts that
// answer, and a host comes back into rotation once it answers again. A
// fleet of NewPerSession gives each session a far side of its own (a pod),
// made when the session first needs one and released when it ends.
type Fleet struct {
	ids      *idMap // ref.gen is the host's index
	subs     *listeners
	waitSubs *listeners // OnTaskWaiting's
	open     OpenFunc   // nil: fixed hosts

	mu      sync.Mutex
	hosts   []*fleetHost        // nil where released
	placed  map[string]int      // owner token -> host index
	opening map[string]*opening // owners whose host is being made
	opens   sync.WaitGroup      // far sides being made
	closed  bool

	maxTasks int // SessionOptions.MaxTasks
	starting int // Starts under way, counted against maxTasks
}

type fleetHost struct {
	e       *Executor
	release func(context.Context) error // NewPerSession's
	mu      sync.Mutex
	running map[bash.TaskID]int  // the host's running tasks: the connection each runs on
	ended   map[bash.TaskID]bool // tasks that ended before their start was tracked
}

// opening is a session's far side being made.
type opening struct {
	done  chan struct{} // closed once it is made, or failed
	ended bool          // EndOwner came meanwhile: what is made is released
}

// OpenFunc makes the far side of a new session (owner token): how to
// reach it, and release, which frees it (deletes its pod) once the
// session has ended or the fleet is closed.
type OpenFunc func(ctx context.Context, owner string) (h Host, release func(context.Context) error, err error)

// NewFleet makes a fleet of hosts. No host is dialled before a session
// needs one.
func NewFleet(hosts []Host) (*Fleet, error) {
	if len(hosts) == 0 {
		return nil, errors.New("remote: a fleet needs hosts")
	}
	for _, h := range hosts {
		if h.Dial == nil {
			return nil, errors.New("remote: a fleet host has no Dial")
		}
	}
	f := newFleet(nil)
	for _, h := range hosts {
		f.hosts = append(f.hosts, f.newHost(len(f.hosts), h))
	}
	return f, nil
}

// SessionOptions configure NewPerSession; nil means the defaults.
type SessionOptions struct {
	// MaxTasks bounds the background tasks running in all the sessions'
	// far sides together, as local.Options.MaxTasks bounds one executor's
	// (0: no bound but each far side's own). Each far side still bounds
	// its session's own (local.Options.MaxTasksPerOwner there).
	MaxTasks int
}

// NewPerSession makes a fleet that gives each session a far side of its
// own, made by open (and dialled) on the session's first call. A call
// whose far side cannot be made fails with open's or the dial's error, and
// the session's next call tries again. EndOwner ends the session there,
// closes its executor and releases the far side; Close does so for every
// session.
func NewPerSession(open OpenFunc, opts *SessionOptions) *Fleet {
	f := newFleet(open)
	if opts != nil {
		f.maxTasks = opts.MaxTasks
	}
	return f
}

func newFleet(open OpenFunc) *Fleet {
	return &Fleet{ids: newIDMap(), subs: newListeners(), waitSubs: newListeners(), open: open,
		placed: map[string]int{}, opening: map[string]*opening{}}
}

// newHost makes the executor of host number i (or takes the one already
// dialled), its notices the fleet's.
func (f *Fleet) newHost(i int, h Host) *fleetHost {
	e := h.Dialled
	if e == nil {
		e = newExecutor(&h.Options, h.Dial)
	}
	fh := &fleetHost{e: e, running: map[bash.TaskID]int{}, ended: map[bash.TaskID]bool{}}
	fh.e.OnTaskDone(func(t bash.Task) { f.taskDone(fh, i, t) })
	fh.e.OnTaskWaiting(func(t bash.Task) {
		t.ID = f.ids.local(ref{i, t.ID})
		f.waitSubs.add(t)
	})
	return fh
}

// host is host number i, nil once released.
func (f *Fleet) host(i int) *fleetHost {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hosts[i]
}

// live are the hosts not released, with their numbers.
func (f *Fleet) live() (idx []int, hosts []*fleetHost) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, h := range f.hosts {
		if h != nil {
			idx, hosts = append(idx, i), append(hosts, h)
		}
	}
	return idx, hosts
}

// Hosts are the executors of the fleet's hosts, in order (a per-session
// fleet's: those of the sessions open now).
func (f *Fleet) Hosts() []*Executor {
	_, hosts := f.live()
	out := make([]*Executor, len(hosts))
	for i, h := range hosts {
		out[i] = h.e
	}
	return out
}

func (f *Fleet) taskDone(h *fleetHost, host int, t bash.Task) {
	h.mu.Lock()
	if _, ok := h.running[t.ID]; ok {
		delete(h.running, t.ID)
	} else {
		h.ended[t.ID] = true // its end overtook its start's reply
	}
	h.mu.Unlock()
	t.ID = f.ids.local(ref{host, t.ID})
	f.subs.add(t)
}

// OnTaskDone registers fn to be called once for every task of any host
// that ends from now on.
func (f *Fleet) OnTaskDone(fn func(bash.Task)) (unsubscribe func()) { return f.subs.subscribe(fn) }

// OnTaskWaiting registers fn to be called each time a task of any host
// starts waiting for input (see Executor.OnTaskWaiting).
func (f *Fleet) OnTaskWaiting(fn func(bash.Task)) (unsubscribe func()) {
	return f.waitSubs.subscribe(fn)
}

// place returns the host of owner's session, placing a new session on the
// least loaded host that answers, or on a far side of its own.
func (f *Fleet) place(ctx context.Context, owner string) (int, error) {
	if f.open != nil {
		return f.openHost(ctx, owner)
	}
	f.mu.Lock()
	i, ok, err := f.placedLocked(owner)
	f.mu.Unlock()
	if ok {
		return i, err
	}
	var errs []error
	for _, i := range f.byLoad() {
		if _, err := f.hosts[i].e.current(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if j, ok := f.placed[owner]; ok {
			return j, nil // placed meanwhile
		}
		f.placed[owner] = i
		return i, nil
	}
	return 0, errors.Join(errs...)
}

// placedLocked returns owner's host if placed (ok), or ErrClosed (ok)
// once the fleet is closed. f.mu is held.
func (f *Fleet) placedLocked(owner string) (i int, ok bool, err error) {
	if f.closed {
		return 0, true, bash.ErrClosed
	}
	i, ok = f.placed[owner]
	return i, ok, nil
}

// openHost makes and dials the far side of owner's new session; calls of
// the same session meanwhile wait for it.
func (f *Fleet) openHost(ctx context.Context, owner string) (int, error) {
	f.mu.Lock()
	for {
		if i, ok, err := f.placedLocked(owner); ok {
			f.mu.Unlock()
			return i, err
		}
		o, ok := f.opening[owner]
		if !ok {
			break
		}
		f.mu.Unlock()
		select {
		case <-o.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		f.mu.Lock()
		if o.ended {
			f.mu.Unlock()
			return 0, bash.ErrClosed // the session ended meanwhile
		}
	}
	o := &opening{done: make(chan struct{})}
	f.opening[owner] = o
	f.opens.Add(1)
	f.mu.Unlock()
	defer f.opens.Done()
	defer func() {
		f.mu.Lock()
		delete(f.opening, owner)
		f.mu.Unlock()
		close(o.done)
	}()
	return f.openDial(ctx, owner, o)
}

// openDial makes owner's far side, dials it and adds it as a host, unless
// the session ended meanwhile.
func (f *Fleet) openDial(ctx context.Context, owner string, o *opening) (int, error) {
	h, release, err := f.open(ctx, owner)
	if err != nil {
		return 0, err
	}
	if h.Dial == nil {
		release(context.WithoutCancel(ctx))
		return 0, errors.New("remote: the far side made for a session has no Dial")
	}
	f.mu.Lock()
	i := len(f.hosts)
	fh := f.newHost(i, h)
	fh.release = release
	f.hosts = append(f.hosts, fh)
	f.mu.Unlock()
	if _, err = fh.e.current(ctx); err == nil {
		f.mu.Lock()
		if !f.closed && !o.ended {
			f.placed[owner] = i
			f.mu.Unlock()
			return i, nil
		}
		f.mu.Unlock()
		err = bash.ErrClosed
	}
	f.releaseHost(context.WithoutCancel(ctx), i)
	return 0, err
}

// releaseHost closes host i's executor and releases its far side.
func (f *Fleet) releaseHost(ctx context.Context, i int) error {
	f.mu.Lock()
	h := f.hosts[i]
	f.hosts[i] = nil
	f.mu.Unlock()
	if h == nil {
		return nil
	}
	err := h.e.Close()
	if h.release != nil {
		err = errors.Join(err, h.release(ctx))
	}
	return err
}

// byLoad orders the hosts by running tasks, then sessions placed on them.
func (f *Fleet) byLoad() []int {
	type load struct{ i, tasks, sessions int }
	loads := make([]load, len(f.hosts))
	f.mu.Lock()
	for i, h := range f.hosts {
		loads[i] = load{i: i, tasks: h.load()}
	}
	for _, i := range f.placed {
		loads[i].sessions++
	}
	f.mu.Unlock()
	slices.SortStableFunc(loads, func(a, b load) int {
		if a.tasks != b.tasks {
			return a.tasks - b.tasks
		}
		return a.sessions - b.sessions
	})
	out := make([]int, len(loads))
	for k, l := range loads {
		out[k] = l.i
	}
	return out
}

// Resolve fills the request's defaults on its session's host.
func (f *Fleet) Resolve(ctx context.Context, req bash.ExecRequest) (bash.ExecSpec, error) {
	h, i, err := f.at(ctx, req.Owner)
	if err != nil {
		return bash.ExecSpec{}, err
	}
	spec, err := h.e.Resolve(ctx, req)
	return spec, f.localErr(i, err)
}

// Run runs a command on its session's host.
func (f *Fleet) Run(ctx context.Context, spec bash.ExecSpec) (bash.RunResult, error) {
	h, i, err := f.at(ctx, spec.Owner)
	if err != nil {
		return bash.RunResult{}, err
	}
	res, err := h.e.Run(ctx, spec)
	if res.Adopted != "" {
		h.track(res.Adopted)
		res.Adopted = f.ids.local(ref{i, res.Adopted})
	}
	return res, f.localErr(i, err)
}

// track counts a task the host runs on its current connection.
func (h *fleetHost) track(id bash.TaskID) {
	gen := h.e.generation()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended[id] {
		delete(h.ended, id)
		return
	}
	h.running[id] = gen
}

// load is how many tasks the host runs: those of a lost connection, which
// never end here, were stopped when it was lost and count no more.
func (h *fleetHost) load() int {
	gen := h.e.generation()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for id, g := range h.running {
		if g == gen {
			n++
		} else {
			delete(h.running, id)
		}
	}
	return n
}

// localErr renames a host's task ids in err as the fleet's. A
// per-session fleet whose far side err says is gone (bash.ErrGone)
// releases it, so that the session's next call gets a new one.
func (f *Fleet) localErr(host int, err error) error {
	var se *bash.StartError
	if errors.As(err, &se) {
		se.Task = f.ids.local(ref{host, se.Task})
	}
	var le *bash.LinkError
	if errors.As(err, &le) && le.Task != "" {
		le.Task = f.ids.local(ref{host, le.Task})
	}
	var ue *bash.UnknownTaskError
	if errors.As(err, &ue) {
		ue.ID = f.ids.local(ref{host, ue.ID})
	}
	if f.open != nil && errors.Is(err, bash.ErrGone) {
		f.forget(host)
	}
	return err
}

// forget unplaces the sessions of a far side that is gone, and releases
// it.
func (f *Fleet) forget(host int) {
	f.mu.Lock()
	for owner, i := range f.placed {
		if i == host {
			delete(f.placed, owner)
		}
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	_ = f.releaseHost(ctx, host) // gone already: nothing of it to report
}

// releaseWait bounds the release of a far side found gone.
const releaseWait = 10 * time.Second

// Start starts a background task on its session's host.
func (f *Fleet) Start(ctx context.Context, spec bash.ExecSpec) (bash.Task, error) {
	h, i, err := f.at(ctx, spec.Owner)
	if err != nil {
		return bash.Task{}, err
	}
	if err := f.reserve(); err != nil {
		return bash.Task{}, err
	}
	defer f.unreserve()
	t, err := h.e.Start(ctx, spec)
	if t.ID != "" {
		if !t.Done() {
			h.track(t.ID)
		}
		t.ID = f.ids.local(ref{i, t.ID})
	}
	return t, f.localErr(i, err)
}

// reserve counts a Start against MaxTasks, refusing it at the bound.
func (f *Fleet) reserve() error {
	if f.maxTasks <= 0 {
		return nil
	}
	_, hosts := f.live()
	n := 0
	for _, h := range hosts {
		n += h.load()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n+f.starting >= f.maxTasks {
		return &bash.TaskLimitError{Scope: bash.PerExecutor, Limit: f.maxTasks}
	}
	f.starting++
	return nil
}

func (f *Fleet) unreserve() {
	if f.maxTasks <= 0 {
		return
	}
	f.mu.Lock()
	f.starting--
	f.mu.Unlock()
}

// on finds the host, its number and the host's id of a fleet task id.
func (f *Fleet) on(id bash.TaskID) (*fleetHost, int, bash.TaskID, error) {
	r, ok := f.ids.remote(id)
	f.mu.Lock()
	closed := f.closed
	var h *fleetHost
	if ok {
		h = f.hosts[r.gen]
	}
	f.mu.Unlock()
	if h != nil {
		return h, r.gen, r.id, nil
	}
	if closed {
		return nil, 0, "", bash.ErrClosed
	}
	return nil, 0, "", &bash.UnknownTaskError{ID: id} // never, or its session's far side is gone
}

// at is the host of owner's session, placed now if new.
func (f *Fleet) at(ctx context.Context, owner string) (*fleetHost, int, error) {
	i, err := f.place(ctx, owner)
	if err != nil {
		return nil, 0, err
	}
	h := f.host(i)
	if h == nil {
		return nil, 0, bash.ErrClosed // the session ended meanwhile
	}
	return h, i, nil
}

// Get returns a snapshot of a task.
func (f *Fleet) Get(ctx context.Context, id bash.TaskID) (bash.Task, error) {
	h, i, hid, err := f.on(id)
	if err != nil {
		return bash.Task{}, err
	}
	t, err := h.e.Get(ctx, hid)
	if t.ID != "" {
		t.ID = id
	}
	return t, f.localErr(i, err)
}

// OwnerOf returns the owner token of a task.
func (f *Fleet) OwnerOf(ctx context.Context, id bash.TaskID) (string, error) {
	h, i, hid, err := f.on(id)
	if err != nil {
		return "", err
	}
	owner, err := h.e.OwnerOf(ctx, hid)
	return owner, f.localErr(i, err)
}

// ReadOutput returns what a task printed since the previous read.
func (f *Fleet) ReadOutput(ctx context.Context, id bash.TaskID) (bash.TaskRead, error) {
	h, i, hid, err := f.on(id)
	if err != nil {
		return bash.TaskRead{}, err
	}
	r, err := h.e.ReadOutput(ctx, hid)
	if r.Task.ID != "" {
		r.Task.ID = id
	}
	return r, f.localErr(i, err)
}

// WriteInput writes to a task's input on its host.
func (f *Fleet) WriteInput(ctx context.Context, id bash.TaskID, in bash.Input) (bash.TaskRead, error) {
	h, i, hid, err := f.on(id)
	if err != nil {
		return bash.TaskRead{}, err
	}
	r, err := h.e.WriteInput(ctx, hid, in)
	if r.Task.ID != "" {
		r.Task.ID = id
	}
	var ie *bash.InputError
	if errors.As(err, &ie) {
		ie.ID = id
	}
	return r, f.localErr(i, err)
}

// Kill stops a task on its host; listeners have heard of its end when it
// returns.
func (f *Fleet) Kill(ctx context.Context, id bash.TaskID) (bool, error) {
	h, i, hid, err := f.on(id)
	if err != nil {
		return false, err
	}
	killed, err := h.e.Kill(ctx, hid)
	if err == nil {
		f.subs.flush(ctx)
	}
	return killed, f.localErr(i, err)
}

// List returns the tasks of every host that answers, under the fleet's
// ids; a host that does not answer lists nothing.
func (f *Fleet) List(ctx context.Context) ([]bash.Task, error) {
	var out []bash.Task
	var errs []error
	idx, hosts := f.live()
	for k, h := range hosts {
		i := idx[k]
		if !h.e.up() {
			continue // never dialled, or down: nothing of it to list
		}
		tasks, err := h.e.List(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range tasks {
			t.ID = f.ids.local(ref{i, t.ID})
			out = append(out, t)
		}
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(out, func(a, b bash.Task) int { return taskNumber(a.ID) - taskNumber(b.ID) })
	return out, nil
}

// taskNumber is N of bash-N: the fleet gives ids in order.
func taskNumber(id bash.TaskID) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(string(id), "bash-"))
	return n
}

// EndOwner ends the owner's session on its host and forgets its place; a
// per-session fleet then closes the session's executor and releases its
// far side (one being made is released once made).
func (f *Fleet) EndOwner(ctx context.Context, owner string) error {
	f.mu.Lock()
	if o := f.opening[owner]; o != nil {
		o.ended = true
	}
	i, ok := f.placed[owner]
	delete(f.placed, owner)
	h := (*fleetHost)(nil)
	if ok {
		h = f.hosts[i]
	}
	f.mu.Unlock()
	if h == nil {
		return nil
	}
	err := h.e.EndOwner(ctx, owner)
	if f.open != nil {
		err = errors.Join(err, f.releaseHost(ctx, i))
	}
	return err
}

// Close closes every host's executor, waits for far sides being made, and
// releases those of a per-session fleet.
func (f *Fleet) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	f.opens.Wait()
	f.subs.close()
	f.waitSubs.close()
	var errs []error
	idx, _ := f.live()
	for _, i := range idx {
		errs = append(errs, f.releaseHost(context.Background(), i))
	}
	return errors.Join(errs...)
}
