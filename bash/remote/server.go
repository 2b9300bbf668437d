package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dshgo/dsh/bash"
)

// ServeOptions configure Serve. A nil *ServeOptions means all defaults.
type ServeOptions struct {
	// Containment is what the handshake reports of how exec holds commands
	// ("sandbox", "cgroup", "process-group"); empty means "unknown".
	Containment string
	// Layer is what the handshake reports of the sandbox's layer ("jail",
	// "landlock"; "" without a sandbox).
	Layer string
	// MaxMessage bounds one protocol message. Default DefaultMaxMessage.
	MaxMessage int
	// MaxPendingOutput bounds the live output of one run kept unsent while
	// the link is busy. Default DefaultMaxPendingOutput.
	MaxPendingOutput int
	// OutputEvery is the least time between two pieces of a run's live
	// output: what arrives meanwhile goes out together, which spares the
	// link and both sides' CPU on a flood. Default 20 ms; negative: none.
	OutputEvery time.Duration
	// Logf, if set, receives protocol diagnostics; by default they are
	// dropped (stderr may be the client's terminal, or nothing).
	Logf func(format string, args ...any)
	// SetDeny, if set, is given the deny rules a client's handshake asks
	// the executor to enforce at every exec (Options.Deny); an error fails
	// the handshake. Without it, a handshake with deny rules is refused:
	// they would not hold here.
	SetDeny func(deny []string) error
}

// DefaultMaxPendingOutput is how many bytes of a run's live output the
// server keeps unsent by default.
const DefaultMaxPendingOutput = 64 << 10

// ownerEnder is an executor that keeps something per owner token beyond
// its tasks (a sandbox's jail).
type ownerEnder interface {
	EndOwner(ctx context.Context, owner string) error
}

// Serve serves exec on conn, the far side's end of a byte stream (stdio
// of `dsh-bash executor`), until the stream ends, the client closes it, or
// ctx is done. Serve owns exec: when it returns, exec is closed, which
// kills every task it runs, as dsh-bash mcp does at EOF. It returns nil
// when the client closed the connection or the stream ended, else why it
// stopped.
func Serve(ctx context.Context, conn io.ReadWriteCloser, exec bash.Executor, o *ServeOptions) error {
	if o == nil {
		o = &ServeOptions{}
	}
	s := &server{exec: exec, opts: o, calls: map[uint64]context.CancelFunc{}}
	s.hello = Hello{Version: Version, Containment: o.Containment, Layer: o.Layer, Pid: os.Getpid()}
	if s.hello.Containment == "" {
		s.hello.Containment = "unknown"
	}
	s.hello.Host, _ = os.Hostname()
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Calls wait for ready: the connection's reading starts in NewConn,
	// before s.conn is set.
	s.ready = make(chan struct{})
	s.dones = newNoticeQueue(func(t bash.Task) {
		<-s.ready
		_ = s.conn.Notify(ctx, methodTaskDone, toWireTask(t))
	})
	unsub := exec.OnTaskDone(s.dones.add)
	s.waits = newNoticeQueue(func(t bash.Task) {
		<-s.ready
		_ = s.conn.Notify(ctx, methodTaskWaiting, toWireTask(t))
	})
	if w, ok := exec.(waitWatcher); ok {
		defer w.OnTaskWaiting(s.waits.add)()
	}
	s.conn = jsonrpc2.NewConn(ctx, newLineStream(conn, o.MaxMessage), s,
		jsonrpc2.SetLogger(log.New(logWriter(logf), "", 0)))
	close(s.ready)
	select {
	case <-s.conn.DisconnectNotify():
	case <-ctx.Done():
	}
	cancel()
	s.conn.Close()
	s.cancelAll()
	s.wg.Wait()
	unsub()
	err := exec.Close()
	s.dones.close()
	s.waits.close()
	if errors.Is(err, bash.ErrClosed) {
		err = nil
	}
	return err
}

// waitWatcher is an executor that tells when a task starts waiting for
// input, as local.Executor does.
type waitWatcher interface {
	OnTaskWaiting(fn func(bash.Task)) (unsubscribe func())
}

// server is one connection's state.
type server struct {
	exec  bash.Executor
	opts  *ServeOptions
	conn  *jsonrpc2.Conn
	hello Hello
	dones *noticeQueue
	waits *noticeQueue  // tasks that started waiting for input
	ready chan struct{} // closed once conn is set
	wg    sync.WaitGroup

	mu        sync.Mutex
	calls     map[uint64]context.CancelFunc // running calls, by request id
	handshook bool
	stopped   bool
}

// Handle is called for each message in the connection's reading
// goroutine: notifications at once, calls in goroutines of their own.
func (s *server) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	<-s.ready
	if req.Notif {
		if req.Method == methodCancel {
			var p cancelParams
			if unmarshal(req, &p) == nil {
				s.cancel(p.ID)
			}
		}
		return
	}
	callCtx, ok := s.begin(ctx, req.ID.Num)
	if !ok {
		return
	}
	go func() {
		defer s.end(req.ID.Num)
		rep, rerr := s.dispatch(callCtx, req)
		if rerr != nil {
			_ = conn.ReplyWithError(ctx, req.ID, rerr)
			return
		}
		_ = conn.Reply(ctx, req.ID, rep)
	}()
}

// begin registers a call's cancel function (false once the server stops).
func (s *server) begin(ctx context.Context, id uint64) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	s.calls[id] = cancel
	s.wg.Add(1)
	return ctx, true
}

func (s *server) end(id uint64) {
	s.mu.Lock()
	if cancel, ok := s.calls[id]; ok {
		cancel()
		delete(s.calls, id)
	}
	s.mu.Unlock()
	s.wg.Done()
}

func (s *server) cancel(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel, ok := s.calls[id]; ok {
		cancel()
	}
}

// cancelAll cancels every running call and refuses new ones.
func (s *server) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for _, cancel := range s.calls {
		cancel()
	}
}

func unmarshal(req *jsonrpc2.Request, v any) error {
	if req.Params == nil {
		return nil
	}
	return json.Unmarshal(*req.Params, v)
}

// dispatch runs one call. Its reply carries the executor's error; a
// JSON-RPC error is a protocol failure.
func (s *server) dispatch(ctx context.Context, req *jsonrpc2.Request) (*reply, *jsonrpc2.Error) {
	if req.Method == methodHello {
		return s.handshake(req)
	}
	s.mu.Lock()
	ok := s.handshook
	s.mu.Unlock()
	if !ok {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: "the handshake (hello) must come first"}
	}
	h, ok := handlers[req.Method]
	if !ok {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no method " + req.Method}
	}
	rep, err := h(s, ctx, req)
	if err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
	}
	return rep, nil
}

func (s *server) handshake(req *jsonrpc2.Request) (*reply, *jsonrpc2.Error) {
	var p helloParams
	if err := unmarshal(req, &p); err != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
	}
	if p.Version != Version {
		return nil, &jsonrpc2.Error{Code: codeVersion,
			Message: fmt.Sprintf("protocol version %d is not served here (this dsh-bash speaks version %d)", p.Version, Version)}
	}
	if err := s.setDeny(p.Deny); err != nil {
		return nil, &jsonrpc2.Error{Code: codeDeny, Message: err.Error()}
	}
	s.mu.Lock()
	s.handshook = true
	s.mu.Unlock()
	h := s.hello
	return &reply{Hello: &h}, nil
}

// codeVersion is the JSON-RPC error of a handshake between versions.
const codeVersion = -32001

// codeDeny is the JSON-RPC error of a handshake whose deny rules cannot
// be enforced here.
const codeDeny = -32002

// setDeny has the executor enforce the client's deny rules at exec.
func (s *server) setDeny(deny []string) error {
	switch {
	case len(deny) == 0 && s.opts.SetDeny == nil:
		return nil
	case s.opts.SetDeny == nil:
		return errors.New("this executor cannot enforce deny rules at exec")
	}
	if err := s.opts.SetDeny(deny); err != nil {
		return fmt.Errorf("enforce the deny rules at exec: %w", err)
	}
	return nil
}

// logWriter adapts Logf to the io.Writer of a log.Logger.
type logWriter func(format string, args ...any)

func (f logWriter) Write(b []byte) (int, error) {
	f("%s", b)
	return len(b), nil
}

// maxPendingOutput is MaxPendingOutput, or its default when not positive.
func (o *ServeOptions) maxPendingOutput() int {
	if o.MaxPendingOutput <= 0 {
		return DefaultMaxPendingOutput
	}
	return o.MaxPendingOutput
}

func (o *ServeOptions) outputEvery() time.Duration {
	switch {
	case o.OutputEvery < 0:
		return 0
	case o.OutputEvery == 0:
		return 20 * time.Millisecond
	}
	return o.OutputEvery
}
