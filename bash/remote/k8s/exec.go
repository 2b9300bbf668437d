package k8s

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// Exec dials a program in a running pod's container over the pod's exec
// stream (the API server's pods/exec: WebSocket, falling back to SPDY
// where the server or a proxy between does not take it). Its stdin and
// stdout are the stream; its stderr goes to Stderr. The zero value is not
// usable: set Config, Client, Namespace, Pod and Command.
type Exec struct {
	// Config is how to reach the API server; Client is its core/v1 REST
	// client.
	Config *rest.Config
	Client rest.Interface
	// Namespace and Pod name the pod; Container its container ("": the
	// pod's only one).
	Namespace, Pod, Container string
	// Command is the program to run and its arguments.
	Command []string
	// Stderr receives the program's stderr; nil discards it.
	Stderr io.Writer
	// WaitDelay is how long the program gets, once its stdin is closed, to
	// exit before the stream is torn down. Default 10 s.
	WaitDelay time.Duration
	// Explain, if set, rewrites the error that ended a stream before a
	// reader sees it (saying the pod is gone, say).
	Explain func(err error) error
}

// executor makes the stream of argv, with stdin when withStdin.
func (x *Exec) executor(argv []string, withStdin bool) (remotecommand.Executor, error) {
	req := x.Client.Post().Namespace(x.Namespace).Resource("pods").Name(x.Pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: x.Container, Command: argv,
			Stdin: withStdin, Stdout: true, Stderr: true,
		}, paramCodec())
	ws, err := remotecommand.NewWebSocketExecutor(x.Config, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(x.Config, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// Dial starts Command and returns its stdin and stdout as one stream. The
// stream is set up in the background: an error setting it up (no such
// pod, no such program) is what the first Read returns. Close closes the
// program's stdin and waits up to WaitDelay for it to end.
func (x *Exec) Dial(ctx context.Context) (io.ReadWriteCloser, error) {
	if len(x.Command) == 0 {
		return nil, errors.New("k8s: Exec has no Command")
	}
	ex, err := x.executor(x.Command, true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &execStream{done: make(chan struct{}), wait: x.WaitDelay}
	if s.wait <= 0 {
		s.wait = 10 * time.Second
	}
	s.inR, s.inW = io.Pipe()
	s.outR, s.outW = io.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx)) // the stream outlives the dial
	s.cancel = cancel
	stderr := x.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	go func() {
		defer close(s.done)
		err := ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: s.inR, Stdout: s.outW, Stderr: stderr})
		if err != nil && x.Explain != nil && sctx.Err() == nil {
			err = x.Explain(err)
		}
		s.err = err
		s.inW.Close() // client-go's copy of stdin reads EOF, and ends quietly; writes fail
		s.outW.CloseWithError(cmp.Or(err, io.EOF))
	}()
	return s, nil
}

// execStream is an exec stream's stdin and stdout.
type execStream struct {
	inR, outR *io.PipeReader
	inW, outW *io.PipeWriter
	cancel    context.CancelFunc
	done      chan struct{}
	err       error // why the stream ended (nil: the program exited 0); set before done closes
	wait      time.Duration
	once      sync.Once
}

// EndErr says why the stream ended, once it has (within a moment: its
// reader has just seen it end): the pod gone (a *GoneError), the exec
// refused, the program's exit status. It makes execStream a
// remote.StreamEnder.
func (s *execStream) EndErr() error {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-s.done:
		return s.err
	case <-t.C:
		return nil
	}
}

func (s *execStream) Read(p []byte) (int, error)  { return s.outR.Read(p) }
func (s *execStream) Write(p []byte) (int, error) { return s.inW.Write(p) }

// Close ends the program's stdin, gives it WaitDelay to end, then tears
// the stream down.
func (s *execStream) Close() error {
	s.once.Do(func() {
		s.inW.Close()
		t := time.NewTimer(s.wait)
		select {
		case <-s.done:
		case <-t.C:
		}
		t.Stop()
		s.cancel()
		<-s.done
		s.outR.Close()
	})
	return nil
}

// Run runs script with sh -c in the container, its stdin from stdin (nil:
// none), and returns its stdout; when it fails, the error holds its
// stderr. It is a remote.ScriptRunner.
func (x *Exec) Run(ctx context.Context, script string, stdin io.Reader) (string, error) {
	ex, err := x.executor([]string{"sh", "-c", script}, stdin != nil)
	if err != nil {
		return "", err
	}
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Stderr: &errOut})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if x.Explain != nil {
			err = x.Explain(err)
		}
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return out.String(), nil
}
