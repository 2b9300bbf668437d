package main

import (
	"context"
	"fmt"
	"io"

	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/setup"
)

// executorCmd serves the executor (local, or sandboxed with --sandbox) on
// stdin and stdout for a remote client (package bash/remote): `ssh box
// dsh-bash executor`. When stdin ends, every task is killed.
func executorCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, ef := newFlags("executor", stderr)
	cwd := fs.String("cwd", "", "working directory of a command that names none (default: the current directory)")
	if code, done := parseNoArgs(fs, args, stdout, stderr); done {
		return code
	}
	if !checkCwd("executor", *cwd, stderr) {
		return 2
	}
	ef.serving = true
	opts := ef.options()
	opts.Cwd = *cwd
	s, code := ef.executor(ctx, "executor", opts, stderr)
	if code != 0 {
		return code
	}
	defer s.CloseProxy() // no front end here: unlisted hosts are refused; Serve closes the executor
	err := remote.Serve(ctx, &stdioStream{stdin, stdout}, s.Executor(), &remote.ServeOptions{
		Containment: setup.Containment(s.Executor()),
		Layer:       s.Layer(),
		SetDeny:     s.SetFarDeny,
		Logf:        func(format string, a ...any) { fmt.Fprintf(stderr, "dsh-bash executor: "+format, a...) },
	})
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash executor: %v\n", err)
		return 1
	}
	return 0
}

// stdioStream is stdin and stdout as one stream; Close closes stdin.
type stdioStream struct {
	in  io.Reader
	out io.Writer
}

func (s *stdioStream) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *stdioStream) Write(p []byte) (int, error) { return s.out.Write(p) }

func (s *stdioStream) Close() error {
	if c, ok := s.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
