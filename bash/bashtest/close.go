//go:build linux

package bashtest

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) closeTests(t *testing.T) {
	parallel(t, "kills every task's whole tree and waits", s.closeKills)
	parallel(t, "Start and Run after Close are ErrClosed", s.afterClose)
	parallel(t, "removes spill files", s.closeSpills)
	parallel(t, "concurrent use", s.concurrent)
}

// closeKills: Close stops background and adopted tasks with their whole
// trees and a foreground run in flight, and returns once all are gone.
func (s *suite) closeKills(t *testing.T) {
	h := s.harness(t, nil)
	cmd, tags := h.treeCmd("bg", !s.opts.setsidEscapes)
	h.start(cmd, "alice")
	left := h.tag("left")
	h.run(bash.ExecRequest{Command: "env " + left + " sleep 30 & true", Owner: "bob"})
	sync, fg := h.fifo("sync"), h.tag("fg")
	got := h.runAsync(bg, h.resolve(bash.ExecRequest{Command: "echo > " + quote(sync) + "; env " + fg + " sleep 30"}))
	h.reached(sync)
	tags = append(tags, left, fg)
	h.waitLive(tags...)
	h.close()
	h.assertGone("after Close returned", tags...)
	if o := h.outcome(got); !errors.Is(o.err, bash.ErrClosed) {
		t.Errorf("the foreground run Close stopped: %+v, %v; want an error wrapping bash.ErrClosed", o.res, o.err)
	}
}

func (s *suite) afterClose(t *testing.T) {
	h := s.harness(t, nil)
	ran := filepath.Join(h.cfg.Cwd, "ran")
	spec := h.resolve(bash.ExecRequest{Command: "touch " + quote(ran)})
	h.close()
	if _, err := h.e.Start(h.ctx(), spec); !errors.Is(err, bash.ErrClosed) {
		t.Errorf("Start after Close: %v; want bash.ErrClosed", err)
	}
	if _, err := h.e.Run(h.ctx(), spec); !errors.Is(err, bash.ErrClosed) {
		t.Errorf("Run after Close: %v; want bash.ErrClosed", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a command ran after Close")
	}
}

// closeSpills: the spill files of runs and of tasks are gone after Close
// (checked where this process can see them at their paths).
func (s *suite) closeSpills(t *testing.T) {
	h := s.harness(t, func(c *Config) { c.MaxOutputBytes = 1000 })
	l := h.listen()
	paths := []string{h.runCmd("seq 1000").Stdout.SpillPath}
	task := h.start("seq 1000 >&2", "alice")
	h.wait(l, task.ID)
	paths = append(paths, h.read(task.ID).Stderr.SpillPath)
	paths = append(paths, h.spillOfRunning("seq 1000; sleep 30"))
	for _, p := range paths {
		if p == "" {
			t.Fatalf("no spill file: %q", paths)
		}
	}
	var seen []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			seen = append(seen, p)
		}
	}
	if len(seen) == 0 {
		t.Skipf("this process cannot see the spill files %q at their paths", paths)
	}
	h.close()
	for _, p := range seen {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("spill file %s after Close: %v; want it removed", p, err)
		}
	}
}

// spillOfRunning starts cmd and reads it until a read names a spill file
// of its stdout; the task goes on running.
func (h *harness) spillOfRunning(cmd string) string {
	h.t.Helper()
	task := h.start(cmd, "")
	var path string
	if !h.eventually(func() bool {
		path = h.read(task.ID).Stdout.SpillPath
		return path != ""
	}) {
		h.t.Fatalf("no read of %q ever named a spill file", cmd)
	}
	return path
}

// concurrent: the executor is used from many goroutines at once (for the
// race detector).
func (s *suite) concurrent(t *testing.T) {
	h := s.shared(t, s.common)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 6 {
		wg.Go(func() {
			spec, err := h.e.Resolve(bg, bash.ExecRequest{Command: "echo x"})
			if err == nil {
				_, err = h.e.Run(h.ctx(), spec)
			}
			var task bash.Task
			if err == nil {
				task, err = h.e.Start(h.ctx(), spec)
			}
			if err == nil {
				_, err = h.e.ReadOutput(h.ctx(), task.ID)
			}
			if err == nil {
				_, err = h.e.Kill(h.ctx(), task.ID)
			}
			if err == nil {
				_, err = h.e.List(bg)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
