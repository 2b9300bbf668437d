//go:build linux

package bashtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
)

// livePids lists the live processes (zombies do not count) whose
// environment holds the entry kv.
func livePids(kv string) []int {
	want := []byte(kv)
	var pids []int
	// Not filepath.Glob: it stats each match, and this runs at the end of
	// every case of the suite, over every process of the machine.
	proc, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := proc.Readdirnames(-1)
	proc.Close()
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil || !bytes.Contains(b, want) {
			continue
		}
		found := false
		for _, entry := range bytes.Split(b, []byte{0}) {
			found = found || bytes.Equal(entry, want)
		}
		if found && proctest.Alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// describePids names processes with their command lines, for a message.
func describePids(pids []int) string {
	var parts []string
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		parts = append(parts, fmt.Sprintf("%d (%s)", pid, strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))))
	}
	return strings.Join(parts, ", ")
}

// tag is the environment entry that marks a chosen process of a command:
// `env TAG sleep 30` runs a sleep the suite can find in /proc.
func (h *harness) tag(name string) string {
	return tagName + "=" + h.id + "." + name
}

// waitLive waits until every tagged process is alive: polling a real
// condition, with a deadline.
func (h *harness) waitLive(tags ...string) {
	h.t.Helper()
	for _, tag := range tags {
		if !h.eventually(func() bool { return len(livePids(tag)) > 0 }) {
			h.t.Fatalf("no process with %s ever ran", tag)
		}
	}
}

// waitGone waits until no tagged process is alive.
func (h *harness) waitGone(tag string) {
	h.t.Helper()
	if !h.eventually(func() bool { return len(livePids(tag)) == 0 }) {
		h.t.Fatalf("the process with %s never ended", tag)
	}
}

// waitStopped waits until the tagged processes are stopped (state T).
func (h *harness) waitStopped(tag string) {
	h.t.Helper()
	allStopped := func() bool {
		for _, pid := range livePids(tag) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			// T: stopped; t: stopped under a tracer (an executor that
			// checks every exec keeps a stopped process in its stop).
			if i := bytes.LastIndexByte(b, ')'); i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				return false
			}
		}
		return true
	}
	if !h.eventually(allStopped) {
		h.t.Fatalf("the process with %s never stopped", tag)
	}
}

// assertGone checks, at once, that no tagged process is alive.
func (h *harness) assertGone(what string, tags ...string) {
	h.t.Helper()
	for _, tag := range tags {
		if pids := livePids(tag); len(pids) > 0 {
			h.t.Errorf("%s: the process with %s is still alive: %s", what, tag, describePids(pids))
		}
	}
}

// fifo makes a FIFO in the test's directory (the executor's default
// working directory or, for a test that shares the executor, a directory
// of the test's in it), where the executor's commands see it.
func (h *harness) fifo(name string) string {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// reached waits until a command has written a line to the FIFO (`echo >
// FIFO`): the command got that far.
func (h *harness) reached(fifo string) {
	h.t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the command opens it to write
		if err == nil {
			_, err = bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			h.t.Fatalf("sync point %s: %v", fifo, err)
		}
	case <-time.After(waitLimit):
		unblock(fifo, os.O_WRONLY) // lets the open return, so nothing leaks
		<-done
		h.t.Fatalf("the command never reached its sync point %s", fifo)
	}
}

// release writes a line to the FIFO, which a command waits for with
// `read < FIFO`.
func (h *harness) release(fifo string) {
	h.t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the command opens it to read
		if err == nil {
			_, err = f.WriteString("\n")
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			h.t.Fatalf("release %s: %v", fifo, err)
		}
	case <-time.After(waitLimit):
		unblock(fifo, os.O_RDONLY)
		<-done
		h.t.Fatalf("no command ever waited on %s", fifo)
	}
}

// unblock opens the other end of a FIFO without blocking, so that an open
// blocked on it returns.
func unblock(fifo string, flag int) {
	if f, err := os.OpenFile(fifo, flag|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// quote quotes s for bash.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
