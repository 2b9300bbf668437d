package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash"
)

// TestPrompterCancel: a question pending on the terminal ends as soon as
// its context does (SIGINT during a question), with no line typed.
func TestPrompterCancel(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	out := &askedWriter{asked: make(chan struct{})}
	ask := permissionAsker(newPrompter(r, out))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := ask(ctx, toolbash.Question{Command: "git push"}); done <- err }()
	testwait.Recv(t, out.asked, "the question on the terminal")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled question: %v, want context.Canceled", err)
		}
	case <-time.After(testwait.Limit):
		t.Fatal("a cancelled question still waits for a line")
	}
}

// askedWriter is a terminal that says when the first question is on it.
type askedWriter struct {
	once  sync.Once
	asked chan struct{} // closed at the first write
}

func (w *askedWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.asked) })
	return len(b), nil
}

// TestPrompterShared: the permission and network questions share one
// reader of stdin, and take its lines in turn.
func TestPrompterShared(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	var out strings.Builder
	p := newPrompter(r, &out)
	go fmt.Fprint(w, "s\ny\n")
	d, err := networkAsker(p)(t.Context(), egress.Question{Host: "example.org", Port: 443})
	if err != nil || d != egress.AllowSession {
		t.Errorf("network answer s: %v, %v; want AllowSession", d, err)
	}
	a, err := permissionAsker(p)(t.Context(), toolbash.Question{Command: "git push"})
	if err != nil || a != toolbash.AllowOnce {
		t.Errorf("permission answer y: %v, %v; want AllowOnce", a, err)
	}
}
