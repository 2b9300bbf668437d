//go:build linux

package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
)

// farSides dials servers in this process, one per stream, and can cut the
// stream of the latest as a dropped connection would: both ends see it end.
type farSides struct {
	t    *testing.T
	mu   sync.Mutex
	cuts []func()
	done []chan struct{} // closed when a server's Serve has returned
	fail error           // when set, dialling fails with it
}

func (f *farSides) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	cli, srv, done, err := servePipe(f.t, &local.Options{SpillDir: f.t.TempDir(), Grace: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	f.cuts = append(f.cuts, func() { srv.Close() })
	f.done = append(f.done, done)
	return cli, nil
}

// cut drops the latest stream and waits until its server has closed its
// executor (every task killed).
func (f *farSides) cut() {
	f.mu.Lock()
	cut, done := f.cuts[len(f.cuts)-1], f.done[len(f.done)-1]
	f.mu.Unlock()
	cut()
	testwait.Recv(f.t, done, "return of the far side's Serve once its stream was cut")
}

func (f *farSides) wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cuts {
		c()
	}
	for _, d := range f.done {
		testwait.Recv(f.t, d, "return of a far side's Serve once its stream was cut")
	}
}

func newFarSides(t *testing.T) (*farSides, *Executor) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	f := &farSides{t: t}
	e := dialT(t, f.dial, &Options{Host: "box-7", Backoff: time.Millisecond, MaxBackoff: time.Millisecond})
	t.Cleanup(func() {
		e.Close()
		f.wait()
		if err := goleak.Find(leaks); err != nil {
			t.Errorf("goroutines left: %v", err)
		}
	})
	return f, e
}

func resolve(t *testing.T, e bash.Executor, cmd, owner string) bash.ExecSpec {
	t.Helper()
	spec, err := testwait.Reply("Resolve of "+cmd, func(ctx context.Context) (bash.ExecSpec, error) {
		return e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: owner})
	})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// start starts spec as a background task, within testwait.Limit.
func start(t *testing.T, e bash.Executor, spec bash.ExecSpec) bash.Task {
	t.Helper()
	task, err := testwait.Reply("Start of "+spec.Command, func(ctx context.Context) (bash.Task, error) {
		return e.Start(ctx, spec)
	})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// runSpec runs spec in the foreground, within testwait.Limit.
func runSpec(e bash.Executor, spec bash.ExecSpec) (bash.RunResult, error) {
	return testwait.Reply("Run of "+spec.Command, func(ctx context.Context) (bash.RunResult, error) {
		return e.Run(ctx, spec)
	})
}

// TestLinkLostMidRun: a foreground run whose link drops returns a
// *bash.LinkError naming the host, at once; the background tasks of the
// lost link read as lost, never with a made-up status; the next call
// reconnects, and ids go on from where they were.
func TestLinkLostMidRun(t *testing.T) {
	f, e := newFarSides(t)
	bg := start(t, e, resolve(t, e, "sleep 300", "s1"))
	pidFile := t.TempDir() + "/pid"
	started := make(chan struct{})
	var once sync.Once
	spec := resolve(t, e, "echo $$ > "+pidFile+"; echo up; exec sleep 300", "s1")
	spec.OnOutput = func(bash.Stream, []byte) { once.Do(func() { close(started) }) }
	errc := make(chan error, 1)
	go func() {
		_, err := e.Run(context.Background(), spec) // the cut ends it
		errc <- err
	}()
	testwait.Recv(t, started, "output of the run")
	pid := proctest.PidFromFile(t, pidFile)
	f.cut()
	err := testwait.Recv(t, errc, "return of Run once its link dropped")
	var le *bash.LinkError
	if !errors.As(err, &le) || le.Host != "box-7" || !le.InFlight {
		t.Fatalf("Run over a dropped link: %v, want a *bash.LinkError naming box-7, in flight", err)
	}
	if err := proctest.WaitExit(pid, 10*time.Second); err != nil {
		t.Errorf("the far side did not kill the run's command when the stream ended: %v", err)
	}
	for name, call := range map[string]func(context.Context) error{
		"Get":        func(ctx context.Context) error { _, err := e.Get(ctx, bg.ID); return err },
		"ReadOutput": func(ctx context.Context) error { _, err := e.ReadOutput(ctx, bg.ID); return err },
		"Kill":       func(ctx context.Context) error { _, err := e.Kill(ctx, bg.ID); return err },
		"OwnerOf":    func(ctx context.Context) error { _, err := e.OwnerOf(ctx, bg.ID); return err },
	} {
		err := testwait.Call(name, call)
		if !errors.As(err, &le) || le.Task != bg.ID || le.Host != "box-7" {
			t.Errorf("%s of a task lost with its link: %v, want a *bash.LinkError naming %s on box-7", name, err, bg.ID)
		}
	}
	next, err := testwait.Reply("Start after the link dropped", func(ctx context.Context) (bash.Task, error) {
		return e.Start(ctx, resolve(t, e, "true", "s1"))
	})
	if err != nil {
		t.Fatalf("no reconnection: %v", err)
	}
	if next.ID == bg.ID || next.ID != "bash-2" {
		t.Errorf("the first task after reconnecting is %s; want bash-2 (bash-1 was lost)", next.ID)
	}
}

// TestDialFailure: while the far side cannot be reached, calls fail with a
// *bash.LinkError naming the host and the reason, and retries back off;
// once it answers, calls work again.
func TestDialFailure(t *testing.T) {
	f, e := newFarSides(t)
	f.cut()
	f.mu.Lock()
	f.fail = errors.New("connection refused")
	f.mu.Unlock()
	err := testwait.Call("Resolve while the far side is down", func(ctx context.Context) error {
		_, err := e.Resolve(ctx, bash.ExecRequest{Command: "true"})
		return err
	})
	var le *bash.LinkError
	if !errors.As(err, &le) || le.Host != "box-7" || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Resolve while the far side is down: %v", err)
	}
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	ok := false
	for deadline := time.Now().Add(10 * time.Second); !ok && time.Now().Before(deadline); {
		err = testwait.Call("Resolve once the far side is back", func(ctx context.Context) error {
			_, err := e.Resolve(ctx, bash.ExecRequest{Command: "true"})
			return err
		})
		ok = err == nil
	}
	if !ok {
		t.Fatalf("no reconnection once the far side is back: %v", err)
	}
}

// TestHungFarSide: a far side that never answers cannot hang a call
// beyond its context, not even the handshake.
func TestHungFarSide(t *testing.T) {
	silent := &Command{Argv: []string{"sleep", "300"}, WaitDelay: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Dial(ctx, silent.Dial, &Options{Host: "silent"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("handshake with a silent far side: %v, want the context's deadline", err)
	}
}

// TestVersionMismatch: a server refuses a client of another protocol
// version, saying which it speaks.
func TestVersionMismatch(t *testing.T) {
	cli, _, done, err := servePipe(t, &local.Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	l := &link{host: "old", rwc: cli, runs: map[uint64]*liveRun{}, note: func(int, string, wireTask) {}}
	l.conn = newClientConn(cli, l, &Options{})
	var r reply
	err = testwait.Call("hello of another version", func(ctx context.Context) error {
		return l.call(ctx, methodHello, helloParams{Version: Version + 1}, &r)
	})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("protocol version %d is not served here (this dsh-bash speaks version %d)", Version+1, Version)) {
		t.Errorf("hello of another version: %v", err)
	}
	err = testwait.Call("list before the handshake", func(ctx context.Context) error {
		return l.call(ctx, methodList, nil, &r)
	})
	if err == nil || !strings.Contains(err.Error(), "the handshake (hello) must come first") {
		t.Errorf("a call before the handshake: %v", err)
	}
	l.close()
	testwait.Recv(t, done, "return of Serve once its client closed")
}

// TestKillTellsListenersFirst: when Kill returns, the listeners have heard
// of the task's end, even slow ones.
func TestKillTellsListenersFirst(t *testing.T) {
	_, e := newFarSides(t)
	var mu sync.Mutex
	var heard []bash.TaskID
	e.OnTaskDone(func(task bash.Task) {
		time.Sleep(50 * time.Millisecond) // a slow listener
		mu.Lock()
		heard = append(heard, task.ID)
		mu.Unlock()
	})
	task := start(t, e, resolve(t, e, "sleep 300", "s"))
	err := testwait.Call("Kill", func(ctx context.Context) error {
		_, err := e.Kill(ctx, task.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || heard[0] != task.ID {
		t.Errorf("when Kill returned the listeners had heard of %v, want [%s]", heard, task.ID)
	}
}

// TestDialIsShared: a dial that hangs holds no caller beyond its own ctx,
// and a caller that gives up does not make the dial fail (or back off)
// for the next one.
func TestDialIsShared(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	f := &farSides{t: t}
	release := make(chan struct{})
	var once sync.Once
	slow := func(ctx context.Context) (io.ReadWriteCloser, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return f.dial(ctx)
	}
	e := newExecutor(&Options{Host: "slow"}, slow)
	defer func() {
		once.Do(func() { close(release) })
		e.Close()
		f.wait()
		if err := goleak.Find(leaks); err != nil {
			t.Errorf("goroutines left: %v", err)
		}
	}()
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	long, cancelLong := context.WithCancel(context.Background())
	defer cancelLong()
	first := make(chan error, 1)
	go func() { _, err := e.List(long); first <- err }()
	if _, err := e.List(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a caller behind a hung dial: %v, want its own deadline", err)
	}
	select {
	case err := <-first:
		t.Fatalf("the first caller returned while the dial hangs: %v", err)
	default:
	}
	once.Do(func() { close(release) })
	if err := testwait.Recv(t, first, "return of the first caller once the dial went through"); err != nil {
		t.Errorf("the first caller, once the dial went through: %v", err)
	}
	err := testwait.Call("List", func(ctx context.Context) error {
		_, err := e.List(ctx)
		return err
	})
	if err != nil {
		t.Errorf("a later caller: %v (a caller's deadline must not count as a failed dial)", err)
	}
}

// TestRelativeWorkdirInWorkspace: with a workspace on the far side, a
// relative working directory is under it.
func TestRelativeWorkdirInWorkspace(t *testing.T) {
	e := newExecutor(&Options{Workspace: "/far/ws"}, nil)
	defer e.Close()
	for in, want := range map[string]string{"": "/far/ws", "sub": "/far/ws/sub", "/here/x": "/far/ws/x", "/elsewhere": "/elsewhere"} {
		got := e.mapWorkspace(bash.ExecRequest{Workdir: in, Workspace: "/here"})
		if got.Workdir != want || got.Workspace != "/far/ws" {
			t.Errorf("%q: %+v, want workdir %s", in, got, want)
		}
	}
}
