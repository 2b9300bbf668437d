package remote

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/testwait"
)

// slowClose is a stream whose Close, like an exec stream's or an SSH
// session's, takes a while to tear it down (here until release is
// closed), and makes a second Close wait for the first.
type slowClose struct {
	io.ReadWriteCloser
	once    sync.Once
	calls   atomic.Int32
	closing chan struct{} // closed when the first Close begins
	again   chan struct{} // closed when a second Close begins
	release chan struct{}
	closed  chan struct{} // closed when the first Close is done
}

func (s *slowClose) Close() error {
	if s.calls.Add(1) == 2 {
		close(s.again)
	}
	s.once.Do(func() {
		close(s.closing)
		<-s.release
		s.ReadWriteCloser.Close()
		close(s.closed)
	})
	return nil
}

// TestCloseWaitsForTeardown: when the link broke and a call began to close
// its stream, Close still returns only once the stream is torn down (a
// second close of the connection alone returned at once, and left the
// stream's reader behind).
func TestCloseWaitsForTeardown(t *testing.T) {
	cli, srv, done, err := servePipe(t, localOptions(t, bashtest.Config{Cwd: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	s := &slowClose{ReadWriteCloser: cli, closing: make(chan struct{}), again: make(chan struct{}),
		release: make(chan struct{}), closed: make(chan struct{})}
	e, err := testwait.Reply("hello over pipes", func(ctx context.Context) (*Executor, error) {
		return New(ctx, s, &Options{Host: "pipe"})
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close() // the link breaks: the client's reader closes the connection, and so the stream
	if _, err := testwait.Wait(s.closing, "the stream's close after the link broke"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	// Close either closes the stream again, and so waits for the first
	// close to finish, or returns before the stream is torn down.
	select {
	case err := <-closed:
		close(s.release)
		t.Fatalf("Close returned (%v) while the stream was still being torn down", err)
	case <-s.again:
	case <-time.After(testwait.Limit):
		close(s.release)
		t.Fatal("Close neither returned nor closed the stream")
	}
	close(s.release)
	if err, werr := testwait.Wait(closed, "Close once the stream was torn down"); werr != nil {
		t.Fatal(werr)
	} else if err != nil && !errors.Is(err, bash.ErrLinkLost) {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-s.closed:
	default:
		t.Error("Close returned before the stream was torn down")
	}
	testwait.Wait(done, "the end of Serve")
}
