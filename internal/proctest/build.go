package proctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		err = copyProgram(built, path)
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("build %s: go run removed the program it built, twice: the build cache keeps none", pkg)
}

// copyProgram copies the program at from to to, executable. The copy is
// written by a child process (cp), never through a file this process
// opens: a command this process forks at the same moment would hold a
// copy of such a file's descriptor until its exec, and an exec of the
// program meanwhile (by this process or another) fails "text file busy"
// (ETXTBSY). A source that is gone is an error that wraps
// os.ErrNotExist.
func copyProgram(from, to string) error {
	if _, err := os.Stat(from); err != nil {
		return err
	}
	out, err := exec.Command("cp", "--", from, to).CombinedOutput()
	if err != nil {
		if _, serr := os.Stat(from); serr != nil {
			return serr
		}
		return fmt.Errorf("cp %s %s: %w\n%s", from, to, err, out)
	}
	return os.Chmod(to, 0o755)
}
