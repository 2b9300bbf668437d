package proctest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestBuild: Build puts a program at the path it is given, also when the
// build cache has it already, as a copy: a test that writes to its copy
// changes nobody else's.
func TestBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, name := range []string{"first", "second"} {
		path := filepath.Join(dir, name)
		if err := Build(ctx, path, "./testdata/hello"); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(path).Output()
		if err != nil || string(out) != "hello\n" {
			t.Fatalf("%s build: %q %v, want hello", name, out, err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho changed\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := Build(ctx, filepath.Join(dir, "bad"), "./testdata/no-such-package")
	if err == nil || !strings.Contains(err.Error(), "no-such-package") {
		t.Errorf("Build of a package that does not exist: %v, want an error naming it", err)
	}
}

// TestCopyWhileForking: a program Build put in place runs at once, also
// while this process starts commands on other goroutines. A copy written
// through a file of this process's own failed that exec "text file busy"
// in each of six runs of this test here (2 to 11 copies of 60): each
// command started held a copy of the file's descriptor until its exec.
// (The same goes for WriteProgram.)
func TestCopyWhileForking(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := Build(ctx, src, "./testdata/hello"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					exec.Command("true").Run()
				}
			}
		})
	}
	busy := 0
	const copies = 60
	for i := range copies {
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := CopyProgram(src, path); err != nil {
			t.Fatal(err)
		}
		if err := exec.CommandContext(ctx, path).Run(); errors.Is(err, syscall.ETXTBSY) {
			busy++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if busy > 0 {
		t.Errorf("%d of %d copies failed to start: text file busy", busy, copies)
	}
}
