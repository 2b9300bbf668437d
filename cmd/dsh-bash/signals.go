package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// signals routes the signals that end a dsh-bash: they end the command's
// context, except that a command that drains (dsh-bash mcp --http) takes
// the first SIGTERM for itself (onTerm), and one with an audit log takes
// SIGHUP, to reopen it (onHangup).
type signals struct {
	mu     sync.Mutex
	drain  func() // called by the first SIGTERM in place of ending the context
	hangup func() // called by each SIGHUP in place of ending the context
}

type signalsKey struct{}

// notifyContext is signal.NotifyContext(parent, sigs...), whose first
// SIGTERM (if it is one of sigs) a command can take with onTerm. The
// cause of the context's end names the signal.
func notifyContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sg := &signals{}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		for {
			select {
			case s := <-ch:
				if drain := sg.take(s); drain != nil {
					drain()
					continue
				}
				cancel(fmt.Errorf("%v signal received", s))
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return context.WithValue(ctx, signalsKey{}, sg), func() {
		cancel(nil)
		signal.Stop(ch)
	}
}

// take returns what to call for s in place of ending the context: the
// drain, once, for the first SIGTERM after onTerm; the hangup for each
// SIGHUP after onHangup.
func (sg *signals) take(s os.Signal) func() {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	switch s {
	case syscall.SIGTERM:
		drain := sg.drain
		sg.drain = nil
		return drain
	case syscall.SIGHUP:
		return sg.hangup
	}
	return nil
}

// onTerm makes the first SIGTERM that ctx's notifyContext receives call
// drain (which must not block) instead of ending ctx; a later signal ends
// ctx as before. undo gives SIGTERM back to ctx if it has not come. A ctx
// that no notifyContext made is left alone.
func onTerm(ctx context.Context, drain func()) (undo func()) {
	sg, _ := ctx.Value(signalsKey{}).(*signals)
	if sg == nil {
		return func() {}
	}
	sg.mu.Lock()
	sg.drain = drain
	sg.mu.Unlock()
	return func() {
		sg.mu.Lock()
		sg.drain = nil
		sg.mu.Unlock()
	}
}

// onHangup makes each SIGHUP that ctx's notifyContext receives call f
// (which must not block) instead of ending ctx, until undo. A ctx that no
// notifyContext made is left alone.
func onHangup(ctx context.Context, f func()) (undo func()) {
	sg, _ := ctx.Value(signalsKey{}).(*signals)
	if sg == nil {
		return func() {}
	}
	sg.mu.Lock()
	sg.hangup = f
	sg.mu.Unlock()
	return func() {
		sg.mu.Lock()
		sg.hangup = nil
		sg.mu.Unlock()
	}
}
