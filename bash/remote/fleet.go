package remote

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dshgo/dsh/bash"
)

// Host is one machine of a Fleet: how to reach its `dsh-bash executor`.
type Host struct {
	// Dial opens a stream to the host's executor (SSH.Dial, Command.Dial).
	Dial DialFunc
	// Options configure the host's Executor; Host names it in errors.
	Options Options
}

// Fleet is a bash.Executor that spreads sessions over several hosts. Each
// owner token (session) is placed on one host, the healthy one running the
// fewest tasks, and stays there for its life: its tasks, its files and its
// spill paths are that host's. Task ids are the fleet's own, bash-1,
// bash-2, …, unique across hosts; ownership and notices work as on one
// executor, except that the limit on all tasks is each host's. A host that
// fails fails only its own sessions' calls, with a
// *bash.LinkError naming it; new sessions go to the hosts that answer, and
// a host comes back into rotation once it answers again.
type Fleet struct {
	hosts    []*fleetHost
	ids      *idMap // ref.gen is the host's index
	subs     *listeners
	waitSubs *listeners // OnTaskWaiting's

	mu     sync.Mutex
	placed map[string]int // owner token -> host index
	closed bool
}

type fleetHost struct {
	e       *Executor
	mu      sync.Mutex
	running map[bash.TaskID]int  // the host's running tasks: the connection each runs on
	ended   map[bash.TaskID]bool // tasks that ended before their start was tracked
}

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
	f := &Fleet{ids: newIDMap(), subs: newListeners(), waitSubs: newListeners(), placed: map[string]int{}}
	for i, h := range hosts {
		fh := &fleetHost{e: newExecutor(&h.Options, h.Dial), running: map[bash.TaskID]int{}, ended: map[bash.TaskID]bool{}}
		fh.e.OnTaskDone(func(t bash.Task) { f.taskDone(i, t) })
		fh.e.OnTaskWaiting(func(t bash.Task) {
			t.ID = f.ids.local(ref{i, t.ID})
			f.waitSubs.add(t)
		})
		f.hosts = append(f.hosts, fh)
	}
	return f, nil
}

// Hosts are the fleet's hosts' executors, in order.
func (f *Fleet) Hosts() []*Executor {
	out := make([]*Executor, len(f.hosts))
	for i, h := range f.hosts {
		out[i] = h.e
	}
	return out
}

func (f *Fleet) taskDone(host int, t bash.Task) {
	h := f.hosts[host]
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
// least loaded host that answers.
func (f *Fleet) place(ctx context.Context, owner string) (int, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return 0, bash.ErrClosed
	}
	if i, ok := f.placed[owner]; ok {
		f.mu.Unlock()
		return i, nil
	}
	f.mu.Unlock()
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
	i, err := f.place(ctx, req.Owner)
	if err != nil {
		return bash.ExecSpec{}, err
	}
	return f.hosts[i].e.Resolve(ctx, req)
}

// Run runs a command on its session's host.
func (f *Fleet) Run(ctx context.Context, spec bash.ExecSpec) (bash.RunResult, error) {
	i, err := f.place(ctx, spec.Owner)
	if err != nil {
		return bash.RunResult{}, err
	}
	res, err := f.hosts[i].e.Run(ctx, spec)
	if res.Adopted != "" {
		f.hosts[i].track(res.Adopted)
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

// localErr renames a host's task ids in err as the fleet's.
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
	return err
}

// Start starts a background task on its session's host.
func (f *Fleet) Start(ctx context.Context, spec bash.ExecSpec) (bash.Task, error) {
	i, err := f.place(ctx, spec.Owner)
	if err != nil {
		return bash.Task{}, err
	}
	t, err := f.hosts[i].e.Start(ctx, spec)
	if t.ID != "" {
		if !t.Done() {
			f.hosts[i].track(t.ID)
		}
		t.ID = f.ids.local(ref{i, t.ID})
	}
	return t, f.localErr(i, err)
}

// on finds the host and the host's id of a fleet task id.
func (f *Fleet) on(id bash.TaskID) (int, bash.TaskID, error) {
	r, ok := f.ids.remote(id)
	if !ok {
		f.mu.Lock()
		closed := f.closed
		f.mu.Unlock()
		if closed {
			return 0, "", bash.ErrClosed
		}
		return 0, "", &bash.UnknownTaskError{ID: id}
	}
	return r.gen, r.id, nil
}

// Get returns a snapshot of a task.
func (f *Fleet) Get(ctx context.Context, id bash.TaskID) (bash.Task, error) {
	i, hid, err := f.on(id)
	if err != nil {
		return bash.Task{}, err
	}
	t, err := f.hosts[i].e.Get(ctx, hid)
	if t.ID != "" {
		t.ID = id
	}
	return t, f.localErr(i, err)
}

// OwnerOf returns the owner token of a task.
func (f *Fleet) OwnerOf(ctx context.Context, id bash.TaskID) (string, error) {
	i, hid, err := f.on(id)
	if err != nil {
		return "", err
	}
	owner, err := f.hosts[i].e.OwnerOf(ctx, hid)
	return owner, f.localErr(i, err)
}

// ReadOutput returns what a task printed since the previous read.
func (f *Fleet) ReadOutput(ctx context.Context, id bash.TaskID) (bash.TaskRead, error) {
	i, hid, err := f.on(id)
	if err != nil {
		return bash.TaskRead{}, err
	}
	r, err := f.hosts[i].e.ReadOutput(ctx, hid)
	if r.Task.ID != "" {
		r.Task.ID = id
	}
	return r, f.localErr(i, err)
}

// WriteInput writes to a task's input on its host.
func (f *Fleet) WriteInput(ctx context.Context, id bash.TaskID, in bash.Input) (bash.TaskRead, error) {
	i, hid, err := f.on(id)
	if err != nil {
		return bash.TaskRead{}, err
	}
	r, err := f.hosts[i].e.WriteInput(ctx, hid, in)
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
	i, hid, err := f.on(id)
	if err != nil {
		return false, err
	}
	killed, err := f.hosts[i].e.Kill(ctx, hid)
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
	for i, h := range f.hosts {
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

// EndOwner ends the owner's session on its host and forgets its place.
func (f *Fleet) EndOwner(ctx context.Context, owner string) error {
	f.mu.Lock()
	i, ok := f.placed[owner]
	delete(f.placed, owner)
	f.mu.Unlock()
	if !ok {
		return nil
	}
	return f.hosts[i].e.EndOwner(ctx, owner)
}

// Close closes every host's executor.
func (f *Fleet) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	f.subs.close()
	f.waitSubs.close()
	var errs []error
	for _, h := range f.hosts {
		errs = append(errs, h.e.Close())
	}
	return errors.Join(errs...)
}
