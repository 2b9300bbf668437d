package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/observe"
)

// reports collects what a Log reports through Options.Errorf.
type reports struct {
	mu   sync.Mutex
	msgs []string
	ch   chan string // each message, if set
}

func (r *reports) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
	if r.ch != nil {
		r.ch <- msg
	}
}

func (r *reports) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// next is the next report, within testwait.Limit.
func (r *reports) next(t *testing.T, what string) string {
	t.Helper()
	timer := time.NewTimer(testwait.Limit)
	defer timer.Stop()
	select {
	case msg := <-r.ch:
		return msg
	case <-timer.C:
		t.Fatalf("no report of %s within %v", what, testwait.Limit)
		return ""
	}
}

// call is a call event, told apart by its command.
func call(command string) *observe.Call {
	return &observe.Call{Time: at, Session: "s", Tool: "bash", Command: command, Outcome: "ok"}
}

// commands are the commands of the call lines in lines, and the
// audit_dropped lines' counts by reason.
func commands(t *testing.T, lines []string) (cmds []string, dropped map[string]int64) {
	t.Helper()
	dropped = map[string]int64{}
	for _, l := range lines {
		if l == "" {
			continue
		}
		var v struct {
			Event, Command, Reason string
			Dropped                int64
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		switch v.Event {
		case "call":
			cmds = append(cmds, v.Command)
		case "audit_dropped":
			dropped[v.Reason] += v.Dropped
		default:
			t.Errorf("unexpected line %q", l)
		}
	}
	return cmds, dropped
}

// fullFIFO makes a FIFO whose pipe is full (4 KiB, filled with newlines),
// and returns its path and its read end, which nothing reads until the
// test does.
func fullFIFO(t *testing.T) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := unix.FcntlInt(r.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
	w, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(w)
	fill := []byte(strings.Repeat("\n", 512))
	for {
		if _, err := syscall.Write(w, fill); errors.Is(err, syscall.EAGAIN) {
			return path, r
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// emitAll gives n call events to sink, failing the test if that does not
// return within testwait.Limit: a sink must never block.
func emitAll(t *testing.T, sink observe.Sink, n int, prefix string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			sink(call(fmt.Sprintf("%s %d", prefix, i)))
		}
	}()
	timer := time.NewTimer(testwait.Limit)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("the sink blocked: %d events not given within %v", n, testwait.Limit)
	}
}

// TestQueueFull: with the file's reader stuck, events past the queue are
// dropped without holding up the sink, reported once, and counted in the
// log when the writer catches up; none is lost unaccounted.
func TestQueueFull(t *testing.T) {
	fifo, r := fullFIFO(t)
	rep := &reports{}
	l, err := Open(fifo, &Options{QueueSize: 4, Errorf: rep.errorf})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	emitAll(t, l.Sink(), n, "cmd")
	// The writer holds at most one event, blocked on the full pipe, and
	// the queue four.
	if d := l.Dropped(); d < n-5 {
		t.Errorf("Dropped() = %d with a stuck writer, want at least %d", d, n-5)
	}
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		read <- b
	}()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cmds, dropped := commands(t, strings.Split(string(<-read), "\n"))
	d := l.Dropped()
	if dropped[reasonQueueFull] != d || int64(len(cmds))+d != n {
		t.Errorf("%d calls written, audit_dropped says %v, Dropped() %d: want %d in all", len(cmds), dropped, d, n)
	}
	for i := 1; i < len(cmds); i++ {
		var a, b int
		fmt.Sscanf(cmds[i-1], "cmd %d", &a)
		fmt.Sscanf(cmds[i], "cmd %d", &b)
		if a >= b {
			t.Errorf("calls written out of order: %q", cmds)
			break
		}
	}
	want := []string{
		fmt.Sprintf("audit log %s: the writer is behind; events are dropped until it catches up", fifo),
		fmt.Sprintf("audit log %s: the writer caught up; %d events were dropped", fifo, d),
	}
	if got := rep.all(); !slices.Equal(got, want) {
		t.Errorf("reports\n got %q\nwant %q", got, want)
	}
}

// TestDiskFull: writes to a full disk (/dev/full: ENOSPC) lose their
// lines, are reported once, and never hold up the sink.
func TestDiskFull(t *testing.T) {
	rep := &reports{}
	l, err := Open("/dev/full", &Options{Errorf: rep.errorf})
	if err != nil {
		t.Fatal(err)
	}
	emitAll(t, l.Sink(), 50, "cmd")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if d := l.Dropped(); d != 50 {
		t.Errorf("Dropped() = %d, want 50", d)
	}
	want := []string{"audit log /dev/full: cannot write: no space left on device; events are lost until it can be written again"}
	if got := rep.all(); !slices.Equal(got, want) {
		t.Errorf("reports\n got %q\nwant %q", got, want)
	}
}

// TestWritingAgain: after a streak of failed writes, the first line that
// can be written again is the count of the lost ones, and the recovery is
// reported.
func TestWritingAgain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	rep := &reports{ch: make(chan string, 4)}
	l, err := Open(path, &Options{Errorf: rep.errorf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	emitAll(t, l.Sink(), 3, "lost")
	if got, want := rep.next(t, "the failed write"), "audit log "+path+": cannot write: no space left on device; events are lost until it can be written again"; got != want {
		t.Errorf("report %q, want %q", got, want)
	}
	// The disk has room again: logrotate's new file is a real one.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	l.Sink()(call("kept"))
	if got, want := rep.next(t, "writing again"), "audit log "+path+": writing again; 3 events were lost"; got != want {
		t.Errorf("report %q, want %q", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cmds, dropped := commands(t, readLines(t, path))
	if !slices.Equal(cmds, []string{"kept"}) || dropped[reasonWriteFailed] != 3 || l.Dropped() != 3 {
		t.Errorf("calls %q, audit_dropped %v, Dropped() %d; want [kept], 3 write failed, 3", cmds, dropped, l.Dropped())
	}
	if lines := readLines(t, path); !strings.Contains(lines[0], `"event":"audit_dropped","session":"","dropped":3,"reason":"write failed"}`) {
		t.Errorf("first line %q, want the count of lost lines", lines[0])
	}
}

// TestReopenAfterRename: logrotate renames the file, then Reopen: the old
// file keeps the lines of before, the new one (0600) gets those after.
func TestReopenAfterRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l := open(t, path, nil)
	sink := l.Sink()
	sink(call("before 1"))
	sink(call("before 2"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	sink(call("after"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if old, _ := commands(t, readLines(t, path+".1")); !slices.Equal(old, []string{"before 1", "before 2"}) {
		t.Errorf("rotated file: %q", old)
	}
	if cur, _ := commands(t, readLines(t, path)); !slices.Equal(cur, []string{"after"}) {
		t.Errorf("new file: %q", cur)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new file: %v, mode %v; want 0600", err, fi.Mode())
	}
}

// TestReopenIdle: a Reopen with nothing queued moves to the new file at
// once, and twice in a row leaves the middle file empty.
func TestReopenIdle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l := open(t, path, nil)
	l.Sink()(call("one"))
	for _, suffix := range []string{".1", ".2"} {
		if err := os.Rename(path, path+suffix); err != nil {
			t.Fatal(err)
		}
		if err := l.Reopen(); err != nil {
			t.Fatal(err)
		}
	}
	l.Sink()(call("two"))
	l.Close()
	for suffix, want := range map[string][]string{".1": {"one"}, ".2": nil, "": {"two"}} {
		if got, _ := commands(t, readLines(t, path+suffix)); !slices.Equal(got, want) {
			t.Errorf("file %s: %q, want %q", suffix, got, want)
		}
	}
}

// TestOpenErrors: a path that cannot be written is refused at Open, and by
// Reopen (which leaves the log on its old file).
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing", "audit.log"), "audit log: open " + dir + "/missing/audit.log: no such file or directory"},
		{dir, "audit log: open " + dir + ": is a directory"},
		{"", "audit log: open : no such file or directory"},
	} {
		if l, err := Open(tc.path, nil); err == nil || err.Error() != tc.want {
			t.Errorf("Open(%q): %v, want %q", tc.path, err, tc.want)
			if l != nil {
				l.Close()
			}
		}
	}
	if _, err := Open(filepath.Join(dir, "x"), &Options{QueueSize: -1}); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("negative QueueSize: %v", err)
	}
	sub := filepath.Join(dir, "logs")
	os.Mkdir(sub, 0o700)
	path := filepath.Join(sub, "audit.log")
	l := open(t, path, nil)
	l.Sink()(call("kept"))
	os.Rename(sub, sub+".gone")
	if err := l.Reopen(); err == nil || err.Error() != "audit log: open "+path+": no such file or directory" {
		t.Errorf("Reopen in a directory gone: %v", err)
	}
	l.Sink()(call("kept too"))
	l.Close()
	if got, _ := commands(t, readLines(t, filepath.Join(sub+".gone", "audit.log"))); !slices.Equal(got, []string{"kept", "kept too"}) {
		t.Errorf("the old file has %q", got)
	}
}

// TestCloseTimeout: Close gives up on a write the system holds (a FIFO no
// one reads), drops the rest and says so, and leaves no goroutine.
func TestCloseTimeout(t *testing.T) {
	fifo, _ := fullFIFO(t)
	l, err := Open(fifo, &Options{QueueSize: 8, CloseTimeout: time.Millisecond, Errorf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	emitAll(t, l.Sink(), 5, "cmd")
	want := "audit log " + fifo + ": what was queued was not written within 1ms; the rest is dropped"
	if err := l.Close(); err == nil || err.Error() != want {
		t.Errorf("Close: %v, want %q", err, want)
	}
	<-l.done // the blocked write was cut short
	if d := l.Dropped(); d != 5 {
		t.Errorf("Dropped() = %d, want 5", d)
	}
}

// TestClosed: a closed log drops (and counts) what it is given; Reopen
// and Close say it is closed.
func TestClosed(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "audit.log"), nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Sink()(call("late"))
	if l.Dropped() != 1 {
		t.Errorf("Dropped() = %d after an event given to a closed log", l.Dropped())
	}
	if err := l.Reopen(); !errors.Is(err, ErrClosed) {
		t.Errorf("Reopen: %v", err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("Close again: %v", err)
	}
}

// TestFIFOWithoutReader: Open does not wait for a FIFO's reader.
func TestFIFOWithoutReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, nil); err == nil || err.Error() != "audit log: open "+path+": no such device or address" {
		t.Errorf("Open of a FIFO no one reads: %v", err)
	}
}

// TestConcurrent: events from many goroutines while the file is rotated
// are each in one file, or counted as dropped.
func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	rep := &reports{}
	l, err := Open(path, &Options{QueueSize: 64, Errorf: rep.errorf})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() { emitAll(t, l.Sink(), 200, fmt.Sprintf("g%d", g)) })
	}
	for i := range 3 {
		os.Rename(path, fmt.Sprintf("%s.%d", path, i))
		if err := l.Reopen(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var written int
	var dropped int64
	for _, f := range []string{path, path + ".0", path + ".1", path + ".2"} {
		cmds, d := commands(t, readLines(t, f))
		written += len(cmds)
		dropped += d[reasonQueueFull]
	}
	if int64(written)+l.Dropped() != 1600 || dropped != l.Dropped() {
		t.Errorf("%d written, %d dropped (%d in the log): want 1600 in all", written, l.Dropped(), dropped)
	}
}
