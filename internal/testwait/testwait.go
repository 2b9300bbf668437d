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
// fails, saying it waited for what (a noun phrase: "the end of Serve").
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(Limit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("no %s within %v", what, Limit)
		panic("unreachable")
	}
}

// Call runs call with a context that ends after Limit. If the call failed
// once that passed, the error says that what (a request: "tools/call
// bash") got no reply in time.
func Call(what string, call func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), Limit)
	defer cancel()
	err := call(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no reply to %s within %v: %w", what, Limit, err)
	}
	return err
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
