package proctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Build builds the main package pkg with the go build flags given (such
// as -race) and puts a copy of the program at path.
//
// It builds through go run's cache of programs (go run -exec): a package
// already built with the same flags and sources, by this test process,
// by the tests of another package or by an earlier run, is copied from
// the build cache rather than linked anew, which costs seconds of CPU for
// a program of tens of megabytes. The first build of one is put in a
// temporary directory that go run removes, and in the cache: Build then
// asks again, for the cached one. It puts a copy at path, never the
// cached file itself, which a command of the tests could otherwise
// change for every later run.
func Build(ctx context.Context, path, pkg string, flags ...string) error {
	echo, err := exec.LookPath("echo")
	if err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	args := append(append([]string{"run"}, flags...), "-exec", echo, pkg)
	for range 2 {
		cmd := exec.CommandContext(ctx, "go", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("build %s: %w\n%s", pkg, err, stderr.Bytes())
		}
		built := strings.TrimSpace(string(out))
		if !filepath.IsAbs(built) {
			return fmt.Errorf("build %s: go run -exec %s printed %q, not a program's path", pkg, echo, out)
		}
		err = CopyProgram(built, path)
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("build %s: go run removed the program it built, twice: the build cache keeps none", pkg)
}

// CopyProgram copies the program at from to to, executable, with no
// command of this process's forked while the copy is open for writing
// (see WriteProgram).
func CopyProgram(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	return withoutForks(func() error {
		dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(dst, src); err != nil {
			dst.Close()
			return err
		}
		return dst.Close()
	})
}

// WriteProgram writes an executable file at path, with no command of
// this process's forked while it is open for writing: a command forked
// then holds a copy of the descriptor until its own exec, and an exec of
// the file meanwhile (by this process or another) fails "text file
// busy" (ETXTBSY), which tests that start commands in parallel hit.
func WriteProgram(path string, data []byte) error {
	return withoutForks(func() error { return os.WriteFile(path, data, 0o755) })
}

// withoutForks runs f while no command of this process can be forked:
// syscall.ForkLock, which every fork of the syscall package (os/exec,
// os.StartProcess) takes for writing.
func withoutForks(f func() error) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return f()
}
