// Package testwait bounds the waits of tests. Every wait of a test for
// something that must happen (a reply, a line, a value on a channel, a
// process's end) goes through it, so that what never comes fails the test
// within Limit, saying what it waited for, instead of hanging it until go
// test's timeout.
package testwait

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// Limit bounds each wait: generous for a loaded two-core machine running
// the race detector, far below go test's ten minutes. Only a test that
// would otherwise hang reaches it.
const Limit = 20 * time.Second

// Recv receives a value from ch. If none comes within Limit, the test
// fails, saying it waited for what (a noun phrase: "end of Serve").
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	v, err := Wait(ch, what)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Wait is Recv for a wait that cannot fail the test itself (a Close, or
// off the test's goroutine): if no value comes within Limit, it returns
// an error saying it waited for what.
func Wait[T any](ch <-chan T, what string) (T, error) {
	timer := time.NewTimer(Limit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v, nil
	case <-timer.C:
		var zero T
		return zero, fmt.Errorf("no %s within %v", what, Limit)
	}
}

// Call runs call with a context that ends after Limit. If the call failed
// once that passed, the error says that what (a request: "tools/call
// bash") got no reply in time.
func Call(what string, call func(ctx context.Context) error) error {
	return CallWithin(Limit, what, call)
}

// CallWithin is Call with a bound of its own, for what must wait on
// something slower than a process (a pod's start, on a loaded machine).
func CallWithin(limit time.Duration, what string, call func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	err := call(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no reply to %s within %v: %w", what, limit, err)
	}
	return err
}

// Reply is Call for a call that returns a value.
func Reply[T any](what string, call func(ctx context.Context) (T, error)) (T, error) {
	return ReplyWithin(Limit, what, call)
}

// ReplyWithin is Reply with a bound of its own (see CallWithin).
func ReplyWithin[T any](limit time.Duration, what string, call func(ctx context.Context) (T, error)) (T, error) {
	var v T
	err := CallWithin(limit, what, func(ctx context.Context) (err error) {
		v, err = call(ctx)
		return err
	})
	return v, err
}

// Exit waits for the started cmd to exit and returns what Wait returned.
// If it has not exited within Limit, cmd is killed and the test fails,
// saying what did not exit (a noun phrase: "dsh-bash mcp").
func Exit(t testing.TB, cmd *exec.Cmd, what string) error {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(Limit)
	defer timer.Stop()
	select {
	case err := <-exited:
		return err
	case <-timer.C:
	}
	_ = cmd.Process.Kill()
	t.Fatalf("%s did not exit within %v", what, Limit)
	return nil
}

// pollEvery is how often Until reads the state it waits for.
const pollEvery = time.Millisecond

// Until reads cond every millisecond until it holds or Limit passes, and
// reports whether it held. It is only for a state no event announces: a
// thread's system call in /proc, a process's thread count, a counter of
// the code under test. Wait on a channel, a pipe, a FIFO or a pidfd
// wherever there is one.
func Until(cond func() bool) bool {
	deadline := time.Now().Add(Limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}
