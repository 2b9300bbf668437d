//go:build linux

package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/testwait"
)

// sessionSides makes a far side per session over pipes, counting those made
// and released.
type sessionSides struct {
	t        *testing.T
	mu       sync.Mutex
	hosts    []*pipeHost
	made     map[string]int // owner -> far sides made for it
	released atomic.Int32
	fail     atomic.Bool // open fails while set
}

func (f *sessionSides) open(ctx context.Context, owner string) (Host, func(context.Context) error, error) {
	if f.fail.Load() {
		return Host{}, nil, errors.New("no far side today")
	}
	h := &pipeHost{t: f.t, c: bashtest.Config{}}
	f.mu.Lock()
	f.hosts = append(f.hosts, h)
	f.made[owner]++
	n := len(f.hosts)
	f.mu.Unlock()
	release := func(context.Context) error { f.released.Add(1); return nil }
	return Host{Dial: h.dial, Options: Options{Host: fmt.Sprintf("side-%d", n)}}, release, nil
}

// wait waits for the servers of every far side made.
func (f *sessionSides) wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.hosts {
		for _, d := range h.done {
			if _, err := testwait.Wait(d, "return of a far side's Serve"); err != nil {
				f.t.Error(err)
			}
		}
	}
}

// TestPerSession: each session gets a far side of its own, made once
// however many of its calls come at once, and released when it ends;
// a far side that cannot be made fails the call, and the next one tries
// again; Close releases the rest.
func TestPerSession(t *testing.T) {
	t.Parallel()
	sides := &sessionSides{t: t, made: map[string]int{}}
	f := NewPerSession(sides.open, nil)
	run := func(owner, cmd string) (bash.RunResult, error) {
		return testwait.Reply("a run of "+owner, func(ctx context.Context) (bash.RunResult, error) {
			spec, err := f.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: owner})
			if err != nil {
				return bash.RunResult{}, err
			}
			return f.Run(ctx, spec)
		})
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			owner := fmt.Sprintf("s%d", i%2)
			if res, err := run(owner, "echo $$"); err != nil || res.ExitCode != 0 {
				t.Errorf("run of %s: %v %+v", owner, err, res)
			}
		})
	}
	wg.Wait()
	if sides.made["s0"] != 1 || sides.made["s1"] != 1 {
		t.Fatalf("far sides made per session = %v, want one each", sides.made)
	}
	task, err := testwait.Reply("start", func(ctx context.Context) (bash.Task, error) {
		spec, err := f.Resolve(ctx, bash.ExecRequest{Command: "sleep 30", Owner: "s0"})
		if err != nil {
			return bash.Task{}, err
		}
		return f.Start(ctx, spec)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testwait.Reply("end of s0", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, f.EndOwner(ctx, "s0")
	}); err != nil {
		t.Fatal(err)
	}
	if n := sides.released.Load(); n != 1 {
		t.Errorf("released after one session ended = %d, want 1", n)
	}
	if _, err := f.Get(context.Background(), task.ID); !errors.As(err, new(*bash.UnknownTaskError)) {
		t.Errorf("Get of an ended session's task: err = %v, want *bash.UnknownTaskError", err)
	}
	if res, err := run("s0", "true"); err != nil || sides.made["s0"] != 2 {
		t.Errorf("a session again after its end: %v %+v, far sides made %d, want a new one", err, res, sides.made["s0"])
	}
	sides.fail.Store(true)
	if _, err := run("s2", "true"); err == nil || !strings.Contains(err.Error(), "no far side today") {
		t.Errorf("call whose far side cannot be made: err = %v", err)
	}
	sides.fail.Store(false)
	if _, err := run("s2", "true"); err != nil {
		t.Errorf("the next call of that session: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n := sides.released.Load(); n != 4 {
		t.Errorf("released after Close = %d, want 4 (every far side made)", n)
	}
	if _, err := run("s3", "true"); !errors.Is(err, bash.ErrClosed) {
		t.Errorf("call after Close: err = %v, want ErrClosed", err)
	}
	sides.wait()
}

// TestEndOwnerDuringOpen: a session that ends while its far side is being
// made does not keep it: the far side is released once made, and the
// call that made it fails.
func TestEndOwnerDuringOpen(t *testing.T) {
	t.Parallel()
	sides := &sessionSides{t: t, made: map[string]int{}}
	entered, proceed := make(chan struct{}), make(chan struct{})
	f := NewPerSession(func(ctx context.Context, owner string) (Host, func(context.Context) error, error) {
		close(entered)
		<-proceed
		return sides.open(ctx, owner)
	}, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := f.Resolve(context.Background(), bash.ExecRequest{Command: "true", Owner: "s"})
		errc <- err
	}()
	if _, err := testwait.Wait(entered, "the session's far side being made"); err != nil {
		t.Fatal(err)
	}
	if _, err := testwait.Reply("end of s", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, f.EndOwner(ctx, "s")
	}); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	err, werr := testwait.Wait(errc, "the call whose session ended")
	if werr != nil {
		t.Fatal(werr)
	}
	if !errors.Is(err, bash.ErrClosed) {
		t.Errorf("the call whose session ended while its far side was made: err = %v, want ErrClosed", err)
	}
	if n := sides.released.Load(); n != 1 {
		t.Errorf("far sides released after the session ended = %d, want 1 (the one made meanwhile)", n)
	}
	if len(f.Hosts()) != 0 {
		t.Errorf("hosts of an ended session: %d, want none", len(f.Hosts()))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sides.wait()
}
