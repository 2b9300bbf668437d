package remote

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dshgo/dsh/bash"
)

// Options configure a remote Executor. A nil *Options means all defaults.
type Options struct {
	// Host names the far side in errors ("the shell executor on HOST cannot
	// be reached"). Default "remote".
	Host string
	// Workspace, if set, is the directory on the far side where sessions
	// work: it replaces the workspace callers name (a directory of the
	// caller's machine), and a working directory under the caller's
	// workspace moves to the same place under this one. Empty passes
	// callers' directories through.
	Workspace string
	// MaxMessage bounds one protocol message. Default DefaultMaxMessage.
	MaxMessage int
	// AbortWait bounds how long a foreground run whose ctx ended waits for
	// the far side to stop its command and say what it printed before it
	// returns without, and how long Close waits for the far side to close.
	// Default 10 s.
	AbortWait time.Duration
	// Backoff is the least time between two attempts to reconnect after a
	// failed one; it doubles, up to MaxBackoff, while they fail. Defaults
	// 200 ms and 30 s.
	Backoff, MaxBackoff time.Duration
	// DialTimeout bounds one attempt to connect (with Dial's stream and the
	// handshake). Callers wait for it as long as their ctx lets them; it
	// does not end with their ctx. Default 30 s.
	DialTimeout time.Duration
	// Logf, if set, receives protocol diagnostics.
	Logf func(format string, args ...any)
	// Deny are deny rule patterns the far side enforces at every exec of
	// every command it runs (see permission.ExecRules): they are sent in
	// each handshake, and a far side that cannot enforce them refuses it.
	Deny []string
}

func (o *Options) host() string {
	if o.Host == "" {
		return "remote"
	}
	return o.Host
}

// DialFunc opens a new byte stream to a server (starting `dsh-bash
// executor` on the far side). It must give up when ctx is done.
type DialFunc func(ctx context.Context) (io.ReadWriteCloser, error)

// Executor is a bash.Executor whose commands run on the far side of a byte
// stream, where `dsh-bash executor` (or Serve) runs an executor of its own.
// It is safe for concurrent use. Task ids are its own (bash-1, bash-2, …),
// unique across reconnections.
type Executor struct {
	opts     Options
	dial     DialFunc // nil: one connection, never replaced
	ids      *idMap
	subs     *listeners
	waitSubs *listeners // OnTaskWaiting's

	life    context.Context // ends with Close: it bounds dials
	endLife context.CancelFunc
	dials   sync.WaitGroup // dials in progress

	mu      sync.Mutex
	link    *link // nil before the first dial or after a failed one
	gen     int
	dialing *dialing  // the dial in progress, if any
	lastErr error     // why the last dial failed
	retryAt time.Time // no dial before then
	backoff time.Duration
	closed  bool
}

// New makes an Executor over one byte stream, after the handshake. When
// the stream ends, every call fails with a *bash.LinkError; use Dial to
// reconnect.
func New(ctx context.Context, rwc io.ReadWriteCloser, opts *Options) (*Executor, error) {
	e := newExecutor(opts, nil)
	l, err := dialLink(ctx, rwc, 1, &e.opts, e.taskNote)
	if err != nil {
		rwc.Close()
		e.subs.close()
		e.waitSubs.close()
		return nil, err
	}
	e.link, e.gen = l, 1
	return e, nil
}

// Dial makes an Executor that opens its streams with dial: the first now
// (an error if it fails), and a new one, with backoff, for the first call
// after a stream ended. Tasks of an ended stream are lost: calls about
// them say so.
func Dial(ctx context.Context, dial DialFunc, opts *Options) (*Executor, error) {
	e := newExecutor(opts, dial)
	if _, err := e.current(ctx); err != nil {
		e.Close() // stops a dial still in progress
		return nil, err
	}
	return e, nil
}

func newExecutor(opts *Options, dial DialFunc) *Executor {
	e := &Executor{dial: dial, ids: newIDMap()}
	e.life, e.endLife = context.WithCancel(context.Background())
	if opts != nil {
		e.opts = *opts
	}
	if e.opts.DialTimeout <= 0 {
		e.opts.DialTimeout = 30 * time.Second
	}
	if e.opts.AbortWait <= 0 {
		e.opts.AbortWait = 10 * time.Second
	}
	if e.opts.Backoff <= 0 {
		e.opts.Backoff = 200 * time.Millisecond
	}
	if e.opts.MaxBackoff <= 0 {
		e.opts.MaxBackoff = 30 * time.Second
	}
	e.subs, e.waitSubs = newListeners(), newListeners()
	return e
}

// Host names the far side in errors (Options.Host).
func (e *Executor) Host() string { return e.opts.host() }

// Hello is what the far side said of itself in the handshake of the
// current connection (the zero Hello when there is none).
func (e *Executor) Hello() Hello {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.link == nil {
		return Hello{}
	}
	return e.link.hello
}

// current returns the live link, dialling a new one when the last ended.
// One dial runs at a time, bounded by DialTimeout and the executor's life,
// not by a caller's ctx: each caller waits for it as long as its own ctx
// lets it.
func (e *Executor) current(ctx context.Context) (*link, error) {
	for {
		if l, err := e.live(); l != nil || err != nil {
			return l, err
		}
		d, err := e.startDial()
		if err != nil {
			return nil, err
		}
		select {
		case <-d.done:
			if d.err != nil {
				return nil, d.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dialing is a dial in progress; done is closed once err is set or the
// link is in place.
type dialing struct {
	done chan struct{}
	err  error
}

// startDial returns the dial in progress, or starts one; an error while
// the last failure's backoff lasts.
func (e *Executor) startDial() (*dialing, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dialing != nil {
		return e.dialing, nil
	}
	if time.Now().Before(e.retryAt) {
		return nil, e.lastErr
	}
	d := &dialing{done: make(chan struct{})}
	e.dialing = d
	e.dials.Add(1)
	go e.runDial(d, e.gen+1)
	return d, nil
}

// runDial connects and puts the link in place, or backs off.
func (e *Executor) runDial(d *dialing, gen int) {
	defer e.dials.Done()
	ctx, cancel := context.WithTimeout(e.life, e.opts.DialTimeout)
	l, err := e.connect(ctx, gen)
	cancel()
	e.mu.Lock()
	e.dialing = nil
	switch {
	case err == nil && e.closed:
		l.close()
		err = bash.ErrClosed
	case err != nil:
		e.backoff = min(max(2*e.backoff, e.opts.Backoff), e.opts.MaxBackoff)
		e.retryAt, e.lastErr = time.Now().Add(e.backoff), err
	default:
		e.link, e.gen, e.backoff, e.retryAt = l, gen, 0, time.Time{}
	}
	d.err = err
	e.mu.Unlock()
	close(d.done)
}

// live returns the link if it is up; an error when there is none to be had.
func (e *Executor) live() (*link, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return nil, bash.ErrClosed
	case e.link != nil && !e.link.lost():
		return e.link, nil
	case e.dial == nil:
		return nil, &bash.LinkError{Host: e.opts.host(), Err: bash.ErrLinkLost}
	}
	return nil, nil
}

func (e *Executor) connect(ctx context.Context, gen int) (*link, error) {
	rwc, err := e.dial(ctx)
	if err != nil {
		var le *bash.LinkError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, &bash.LinkError{Host: e.opts.host(), Err: err}
	}
	l, err := dialLink(ctx, rwc, gen, &e.opts, e.taskNote)
	if err != nil {
		rwc.Close()
		var le *bash.LinkError
		if !errors.As(err, &le) {
			err = &bash.LinkError{Host: e.opts.host(), Err: err}
		}
	}
	return l, err
}

// taskNote hears of a far side's ended task, or one that started waiting
// for input, in its link's reading goroutine.
func (e *Executor) taskNote(gen int, method string, w wireTask) {
	t := w.task(e.opts.host())
	t.ID = e.ids.local(ref{gen, w.ID})
	if method == methodTaskWaiting {
		e.waitSubs.add(t)
		return
	}
	e.subs.add(t)
}

// OnTaskWaiting registers fn to be called each time a task starts waiting
// for input, as the far side tells it (see local.Executor.OnTaskWaiting);
// a far side that cannot tell never does.
func (e *Executor) OnTaskWaiting(fn func(bash.Task)) (unsubscribe func()) {
	return e.waitSubs.subscribe(fn)
}

// OnTaskDone registers fn to be called once for every task that ends from
// now on, as the far side reports it. A task lost with its connection
// never ends here: calls about it say it was lost.
func (e *Executor) OnTaskDone(fn func(bash.Task)) (unsubscribe func()) { return e.subs.subscribe(fn) }

// mapWorkspace moves a request's directories to the far side's workspace
// (Options.Workspace).
func (e *Executor) mapWorkspace(req bash.ExecRequest) bash.ExecRequest {
	ws := e.opts.Workspace
	if ws == "" {
		return req
	}
	switch {
	case req.Workdir == "":
		req.Workdir = ws
	case !filepath.IsAbs(req.Workdir):
		req.Workdir = filepath.Join(ws, req.Workdir)
	case req.Workspace != "" && within(req.Workdir, req.Workspace):
		rel, _ := filepath.Rel(req.Workspace, req.Workdir)
		req.Workdir = filepath.Join(ws, rel)
	}
	req.Workspace = ws
	return req
}

func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// Close closes the far side's executor (every task is killed and waited
// for there) and the connection. Listeners hear of nothing once it has
// begun.
func (e *Executor) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	l := e.link
	e.mu.Unlock()
	e.endLife()
	e.dials.Wait() // a dial in progress ends, its link closed
	e.subs.close()
	e.waitSubs.close()
	if l == nil || l.lost() {
		if l != nil {
			l.close()
		}
		return nil
	}
	var r reply
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.AbortWait)
	err := l.call(ctx, methodClose, nil, &r)
	cancel()
	l.close()
	if err == nil {
		err = r.Err.err(l.host)
	}
	if errors.Is(err, bash.ErrLinkLost) {
		return nil // the far side kills everything when the link ends
	}
	return err
}

// up reports whether the executor has a live connection now.
func (e *Executor) up() bool {
	l, err := e.live()
	return l != nil && err == nil
}

// generation numbers the current connection (0 before the first).
func (e *Executor) generation() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.gen
}
