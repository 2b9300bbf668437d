package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dshgo/dsh/bash"
)

// link is one connection to a server: one generation of the executor's
// task ids.
type link struct {
	gen   int
	host  string
	conn  *jsonrpc2.Conn
	rwc   io.ReadWriteCloser // the stream conn runs over
	hello Hello
	seq   atomic.Uint64                            // request ids; 0 is never used
	stall time.Duration                            // how long a send may stay stuck once its ctx ended
	note  func(gen int, method string, t wireTask) // a task's end, or its wait for input

	mu   sync.Mutex
	runs map[uint64]*liveRun // foreground runs that stream, by request id
}

// liveRun routes a run's output notifications to its observer until the
// run returns.
type liveRun struct {
	mu sync.Mutex
	fn func(bash.Stream, []byte) // nil once Run has returned
}

// dialLink starts a link over rwc and makes the handshake.
func dialLink(ctx context.Context, rwc io.ReadWriteCloser, gen int, o *Options, note func(int, string, wireTask)) (*link, error) {
	l := &link{gen: gen, host: o.host(), rwc: rwc, note: note, runs: map[uint64]*liveRun{}, stall: o.AbortWait}
	l.conn = newClientConn(rwc, l, o)
	var r reply
	if err := l.call(ctx, methodHello, helloParams{Version: Version, Client: "dsh-bash", Deny: o.Deny}, &r); err != nil {
		l.conn.Close()
		return nil, whyEnded(rwc, err)
	}
	if r.Hello == nil {
		l.conn.Close()
		return nil, &bash.LinkError{Host: l.host, Err: errors.New("the far side's handshake said nothing")}
	}
	l.hello = *r.Hello
	return l, nil
}

// newClientConn starts the JSON-RPC connection of link l over rwc.
func newClientConn(rwc io.ReadWriteCloser, l *link, o *Options) *jsonrpc2.Conn {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return jsonrpc2.NewConn(context.Background(), newLineStream(rwc, o.MaxMessage), l,
		jsonrpc2.SetLogger(log.New(logWriter(logf), "", 0)))
}

// Handle receives the server's notifications, in order, in the link's
// reading goroutine. It never blocks for long: observers must not block,
// and ended tasks are queued.
func (l *link) Handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) {
	switch req.Method {
	case methodOutput:
		var n outputNote
		if unmarshal(req, &n) != nil {
			return
		}
		l.mu.Lock()
		r := l.runs[n.Call]
		l.mu.Unlock()
		if r != nil {
			r.deliver(n.Stream, n.Text)
		}
	case methodTaskDone, methodTaskWaiting:
		var t wireTask
		if unmarshal(req, &t) == nil {
			l.note(l.gen, req.Method, t)
		}
	}
}

func (r *liveRun) deliver(stream bash.Stream, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fn != nil && text != "" {
		r.fn(stream, []byte(text))
	}
}

// stop ends the observer's calls; once it returns there are no more.
func (r *liveRun) stop() {
	r.mu.Lock()
	r.fn = nil
	r.mu.Unlock()
}

// lost reports whether the connection has ended.
func (l *link) lost() bool {
	select {
	case <-l.conn.DisconnectNotify():
		return true
	default:
		return false
	}
}

// call makes one call and decodes its reply. A lost link is a
// *bash.LinkError; a ctx done first sends the server a cancellation (the
// server stops what it does for the call) and returns ctx's error.
func (l *link) call(ctx context.Context, method string, params any, r *reply) error {
	return l.callID(ctx, l.seq.Add(1), method, params, r)
}

func (l *link) callID(ctx context.Context, id uint64, method string, params any, r *reply) error {
	w, err := l.dispatch(ctx, id, method, params)
	if err != nil {
		return err
	}
	err = w.Wait(ctx, r)
	if ctx.Err() != nil && err == ctx.Err() {
		l.cancel(id)
		return err
	}
	if err != nil {
		return l.linkErr(err, true)
	}
	return nil
}

// dispatch sends a call. The send waits for the stream: a far side that
// stopped reading would hold it for ever, so when it is still stuck
// Options.AbortWait after ctx ended the link is closed (it is no good)
// and ctx's error returned.
func (l *link) dispatch(ctx context.Context, id uint64, method string, params any) (jsonrpc2.Waiter, error) {
	type sent struct {
		w   jsonrpc2.Waiter
		err error
	}
	ch := make(chan sent, 1)
	go func() {
		w, err := l.conn.DispatchCall(ctx, method, params, jsonrpc2.PickID(jsonrpc2.ID{Num: id}))
		ch <- sent{w, err}
	}()
	select {
	case s := <-ch:
		if s.err != nil {
			return s.w, l.linkErr(s.err, false)
		}
		return s.w, nil
	case <-ctx.Done():
		// The call still goes out (a Kill whose ctx ended still stops its
		// task), unless the stream stays stuck for the stall bound.
		t := time.NewTimer(l.stall)
		defer t.Stop()
		select {
		case s := <-ch:
			if s.err != nil {
				return s.w, l.linkErr(s.err, false)
			}
			return s.w, nil
		case <-t.C:
		}
		l.conn.Close()
		<-ch
		return jsonrpc2.Waiter{}, ctx.Err()
	}
}

// linkErr turns a failed call into the executor's error: a lost
// connection, or a protocol error of the far side.
func (l *link) linkErr(err error, inFlight bool) error {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return &bash.LinkError{Host: l.host, Err: errors.New(je.Message)}
	}
	// The stream failed: the link is over, whatever the other side thinks.
	l.conn.Close()
	if !errors.Is(err, jsonrpc2.ErrClosed) {
		err = fmt.Errorf("%w (%v)", bash.ErrLinkLost, err)
	} else {
		err = bash.ErrLinkLost
	}
	return &bash.LinkError{Host: l.host, Err: err, InFlight: inFlight}
}

// close closes the link and waits until its stream is torn down. The
// connection may have been closed already, by a call that found the
// stream broken, and be closing its stream still: only the first close
// of a connection closes its stream, and the others return at once. The
// streams' Close waits for a first one to finish.
func (l *link) close() {
	l.conn.Close()
	l.rwc.Close()
}

// cancel asks the server to stop call id, without waiting for the
// stream (a stuck one is closed by the call that waits on it).
func (l *link) cancel(id uint64) {
	go func() { _ = l.conn.Notify(context.Background(), methodCancel, cancelParams{ID: id}) }()
}

// exiter is a stream to a program that can say how the program ended.
type exiter interface{ exitErr() error }

// A StreamEnder is a stream (what a DialFunc returns) that can say why it
// ended when its transport knows more than that the connection was lost:
// the pod it reached is gone, the exec was refused, the program there
// exited. A failed handshake's error then says so, wrapping EndErr's
// error. EndErr returns nil when the stream has not ended, or ended
// without saying why.
type StreamEnder interface{ EndErr() error }

// whyEnded adds to a failed handshake how the far side's program ended,
// when it did: the usual cause is a missing dsh-bash (exit status 127).
func whyEnded(rwc io.ReadWriteCloser, err error) error {
	var le *bash.LinkError
	if !errors.As(err, &le) || !errors.Is(err, bash.ErrLinkLost) {
		return err
	}
	var end error
	switch x := rwc.(type) {
	case exiter:
		if exit := x.exitErr(); exit != nil {
			end = fmt.Errorf("the far side's program ended before the handshake: %w", exit)
		}
	case StreamEnder:
		end = x.EndErr()
	}
	if end == nil {
		return err
	}
	hint := ""
	if notFound(end) {
		hint = " (command not found: is dsh-bash installed there? --remote-upload copies this one)"
	}
	le.Err = fmt.Errorf("%w: %w%s", bash.ErrLinkLost, end, hint)
	return le
}

// notFound reports whether err is a program's exit status 127, a shell's
// "command not found" (os/exec's, x/crypto/ssh's and client-go's exit
// errors say their status).
func notFound(err error) bool {
	var status interface{ ExitStatus() int }
	if errors.As(err, &status) {
		return status.ExitStatus() == 127
	}
	var code interface{ ExitCode() int }
	return errors.As(err, &code) && code.ExitCode() == 127
}
