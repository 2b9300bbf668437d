//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/testwait"
	"golang.org/x/sys/unix"
)

// waitHelper is a REPL of the test binary's that waits for its input the
// way mode says, prints "> " as its prompt, and answers each line l with
// "=l": "read" blocks in read(2); "poll", "select" and "epoll" wait in
// that call first; "reader-thread" reads on a thread of its own while
// the main one sleeps; "spinner" reads too while another thread runs
// without a pause (never waiting: something runs).
func waitHelper(mode string) int {
	if path, ok := strings.CutPrefix(mode, "fusepoll="); ok { // see fusePoll
		return fusePoll(path)
	}
	if mode == "crowd" { // more threads than a probe reads, all asleep
		for range maxProbedThreads + 10 {
			go func() {
				runtime.LockOSThread()
				unix.Nanosleep(&unix.Timespec{Sec: 3600}, nil)
			}()
		}
		// The prompt comes once they all are (threads start unannounced).
		testwait.Until(func() bool {
			tids, _ := readDirNames("/proc/self/task")
			return len(tids) > maxProbedThreads+10
		})
		mode = "read"
	}
	if mode == "spinner" {
		go func() {
			// At the lowest priority, on a thread of its own: it takes only
			// a core nothing else wants, and a thread runnable is running
			// all the same.
			runtime.LockOSThread()
			unix.Setpriority(unix.PRIO_PROCESS, 0, 19) // 0: this thread
			for {
			}
		}()
	}
	if mode == "reader-thread" {
		done := make(chan int)
		go func() {
			runtime.LockOSThread()
			done <- waitLoop("read")
		}()
		return <-done
	}
	return waitLoop(mode)
}

// waitLoop answers lines, waiting for each as mode says.
func waitLoop(mode string) int {
	buf := make([]byte, 4096)
	var line []byte
	for {
		if len(line) == 0 {
			os.Stdout.WriteString("> ")
		}
		if err := waitReadable(mode); err != nil {
			fmt.Fprintln(os.Stderr, mode+":", err)
			return 1
		}
		n, err := unix.Read(0, buf)
		if n <= 0 || err != nil {
			return 0
		}
		line = append(line, buf[:n]...)
		for {
			i := strings.IndexByte(string(line), '\n')
			if i < 0 {
				break
			}
			fmt.Fprintf(os.Stdout, "=%s\n", line[:i])
			line = line[i+1:]
		}
	}
}

// waitReadable waits until fd 0 is readable, in the system call mode
// names ("read" and "spinner": none, the read blocks).
func waitReadable(mode string) error {
	switch mode {
	case "poll":
		_, err := unix.Poll([]unix.PollFd{{Fd: 0, Events: unix.POLLIN}}, -1)
		return err
	case "select":
		var set unix.FdSet
		set.Set(0)
		_, err := unix.Select(1, &set, nil, nil, nil)
		return err
	case "epoll":
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return err
		}
		defer unix.Close(ep)
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, 0, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: 0}); err != nil {
			return err
		}
		_, err = unix.EpollWait(ep, make([]unix.EpollEvent, 1), -1)
		return err
	}
	return nil
}

// startHelperInput starts the wait helper of mode with its input open (a
// terminal with tty).
func startHelperInput(t *testing.T, e *Executor, mode string, tty bool) bash.TaskID {
	t.Helper()
	var term *bash.TermSize
	if tty {
		term = &bash.TermSize{}
	}
	task := startInput(t, e, bash.ExecRequest{Command: helperCmd(t, "waitin "+mode)}, term)
	t.Cleanup(func() { e.Kill(context.Background(), task.ID) })
	return task.ID
}

// promptThenAnswer reads the wait helper's first prompt, then answers it
// with a line, both with in's waits, and returns all it printed and the
// answer's read.
//
// The answer is typed once the prompt is read: a terminal echoes what is
// typed before a prompt printed after it, and a busy machine can keep
// the helper from printing its prompt within a wait (the spinner's).
func promptThenAnswer(t *testing.T, e *Executor, id bash.TaskID, in bash.Input) (string, bash.TaskRead) {
	t.Helper()
	var prompt string
	deadline := time.Now().Add(testwait.Limit)
	for !strings.HasSuffix(prompt, "> ") {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt within %v: %q", testwait.Limit, prompt)
		}
		first, err := e.WriteInput(context.Background(), id, in)
		if err != nil {
			t.Fatal(err)
		}
		prompt += first.Stdout.Text
	}
	in.Data = []byte("x\n")
	r, err := e.WriteInput(context.Background(), id, in)
	if err != nil {
		t.Fatal(err)
	}
	return prompt + r.Stdout.Text, r
}

// TestWaitingSyscalls: a program waiting for input in each system call a
// program can wait in is seen waiting, through a pipe and a terminal, and
// its answer comes as soon as it waits again; one with a thread that
// runs never is.
func TestWaitingSyscalls(t *testing.T) {
	e := newExec(t, nil)
	for _, mode := range []string{"read", "poll", "select", "epoll", "reader-thread", "spinner"} {
		for _, tty := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tty=%v", mode, tty), func(t *testing.T) {
				t.Parallel()
				id := startHelperInput(t, e, mode, tty)
				in := bash.Input{Wait: 500 * time.Millisecond, Settle: time.Minute}
				if mode != "spinner" {
					in.Wait = 10 * time.Second // only a missed wait could end it
				}
				out, r := promptThenAnswer(t, e, id, in)
				want, waiting := "> =x\n> ", mode != "spinner"
				if out != want || r.Task.WaitingInput != waiting {
					t.Errorf("%s: %q, waiting %v; want %q, waiting %v", mode, out, r.Task.WaitingInput, want, waiting)
				}
			})
		}
	}
}

// TestCrowdUnknown: a task with more threads than a probe reads (each
// costs the server two reads of /proc, outside the task's limits) is not
// read: its answer comes after the settle, and it is not said to wait.
func TestCrowdUnknown(t *testing.T) {
	e := newExec(t, nil)
	id := startHelperInput(t, e, "crowd", false)
	out, r := promptThenAnswer(t, e, id, bash.Input{Wait: 10 * time.Second, Settle: 100 * time.Millisecond})
	if out != "> =x\n> " || r.Task.WaitingInput {
		t.Errorf("a crowd of threads: %q, waiting %v; want %q, not read", out, r.Task.WaitingInput, "> =x\n> ")
	}
}

// TestWatchedSets reads the sets this process itself would wait on, as
// the probe reads another's: the descriptors of a poll set and a select
// set in its memory, and an epoll instance's fdinfo.
func TestWatchedSets(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, _ := fileIDOf(r)
	other, _ := fileIDOf(w) // the same pipe's other end: the same file
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	null, _ := fileIDOf(devNull)
	pid, rfd := os.Getpid(), int(r.Fd())

	set := []unix.PollFd{{Fd: int32(devNull.Fd()), Events: unix.POLLIN}, {Fd: int32(rfd), Events: unix.POLLIN}}
	addr := uint64(uintptr(unsafe.Pointer(&set[0])))
	for _, c := range []struct {
		n    uint64
		id   fileID
		want bool
	}{{2, in, true}, {2, other, true}, {1, in, false}, {2, null, true}, {0, in, false}} {
		if got, err := testProber(c.id).pollWatches(pid, addr, c.n); got != c.want || err != nil {
			t.Errorf("pollWatches(%d entries, %v) = %v, %v; want %v", c.n, c.id, got, err, c.want)
		}
	}
	set[1].Events = unix.POLLOUT
	if got, _ := testProber(in).pollWatches(pid, addr, 2); got {
		t.Errorf("pollWatches of a set that waits to write: true")
	}
	runtime.KeepAlive(set)

	var fds unix.FdSet
	fds.Set(rfd)
	faddr := uint64(uintptr(unsafe.Pointer(&fds)))
	if got, err := testProber(in).selectWatches(pid, uint64(rfd+1), faddr); !got || err != nil {
		t.Errorf("selectWatches of a set with the pipe: %v, %v", got, err)
	}
	if got, _ := testProber(in).selectWatches(pid, uint64(rfd), faddr); got {
		t.Errorf("selectWatches of nfds below the pipe's descriptor: true")
	}
	if got, _ := testProber(in).selectWatches(pid, uint64(rfd+1), 0); got {
		t.Errorf("selectWatches of no read set: true")
	}
	runtime.KeepAlive(&fds)

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if got, _ := epollWatches(pid, ep, in); got {
		t.Errorf("epollWatches of an empty instance: true")
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, rfd, &unix.EpollEvent{Events: unix.EPOLLOUT}); err != nil {
		t.Fatal(err)
	}
	if got, _ := epollWatches(pid, ep, in); got {
		t.Errorf("epollWatches of the pipe for writing: true")
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, rfd, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		t.Fatal(err)
	}
	if got, err := epollWatches(pid, ep, in); !got || err != nil {
		t.Errorf("epollWatches of the pipe for reading: %v, %v", got, err)
	}
	if got, _ := epollWatches(pid, ep, null); got {
		t.Errorf("epollWatches of /dev/null, not watched: true")
	}
}

// testProber is a probe of the input in, as probeTask makes one.
func testProber(in fileID) *prober {
	return &prober{in: in, threads: maxProbedThreads, lookups: maxLookups, fds: map[fdRef]bool{}}
}

// TestManyDescriptors: a poll set of more descriptors than a probe looks
// up, waited on by many threads, makes the state unknown at once; each
// descriptor is looked up once however many threads wait on it.
func TestManyDescriptors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, _ := fileIDOf(r)
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	set := make([]unix.PollFd, maxLookups+1)
	for i := range set {
		set[i] = unix.PollFd{Fd: int32(devNull.Fd()), Events: unix.POLLIN}
	}
	set[len(set)-1].Fd = int32(r.Fd())
	addr := uint64(uintptr(unsafe.Pointer(&set[0])))
	pr := testProber(in)
	for range 100 { // threads waiting on the same set
		if got, err := pr.pollWatches(os.Getpid(), addr, uint64(len(set)-1)); got || err != nil {
			t.Fatalf("a set of /dev/null only: %v, %v", got, err)
		}
	}
	if pr.lookups != maxLookups-1 {
		t.Errorf("lookups left: %d, want %d (one descriptor looked up once)", pr.lookups, maxLookups-1)
	}
	for i := range set[:len(set)-1] {
		set[i].Fd = int32(1000 + i) // distinct, mostly not open
	}
	if _, err := testProber(in).pollWatches(os.Getpid(), addr, uint64(len(set))); !errors.Is(err, errTooMany) {
		t.Errorf("a set of %d distinct descriptors: %v, want errTooMany", len(set), err)
	}
	runtime.KeepAlive(set)
}

func TestWokeSince(t *testing.T) {
	before := []reader{{tid: 10, runs: 5}, {tid: 11, runs: 7}}
	for _, c := range []struct {
		now  []reader
		want bool
	}{
		{nil, false},
		{[]reader{{10, 5}}, false},          // still asleep over what was written
		{[]reader{{10, 6}}, true},           // ran, and waits again
		{[]reader{{10, 5}, {11, 8}}, true},  // another reader ran
		{[]reader{{12, 1}}, true},           // a reader that did not read before
		{[]reader{{10, 5}, {11, 7}}, false}, // nobody ran
	} {
		if got := (probeResult{state: inputWaiting, readers: c.now}).wokeSince(before); got != c.want {
			t.Errorf("wokeSince(%v) = %v, want %v", c.now, got, c.want)
		}
	}
}

func TestEcho(t *testing.T) {
	for _, c := range []struct {
		data string
		text string
		ok   bool
	}{
		{"print(6*7)\n", "print(6*7)\n", true},
		{"a\r\nb\r", "a\nb\n", true},
		{"y", "y", true},
		{"", "", false},
		{"\x03", "", false},                // Ctrl-C shows as ^C, or not at all
		{"ls\t\n", "", false},              // a tab completes
		{"\x1b[A\n", "", false},            // an arrow key recalls a line
		{"a\u009b31mb\n", "a31mb\n", true}, // shown, but read without its C1 control
		{"\u0085", "", false},
	} {
		text, ok := echoText([]byte(c.data))
		if text != c.text || ok != c.ok {
			t.Errorf("echoText(%q) = %q, %v; want %q, %v", c.data, text, ok, c.text, c.ok)
		}
	}
	for _, c := range []struct {
		text, echo, rest, left string
	}{
		{"print(1)\n1\n>>> ", "print(1)\n", "1\n>>> ", ""},
		{"print(", "print(1)\n", "", "1)\n"},            // the rest of the echo is still to come
		{"", "x\n", "", "x\n"},                          // nothing yet
		{"a\n=a\nb\n=b\n", "a\nb\n", "=a\nb\n=b\n", ""}, // a line editor echoes each line as it reads it
		{">>> x\n", "x\n", ">>> x\n", ""},               // output came first: nothing is dropped
		{"hello\n", "bob\n", "hello\n", ""},             // no echo at all (a password prompt)
	} {
		rest, left := cutEcho(c.text, c.echo)
		if rest != c.rest || left != c.left {
			t.Errorf("cutEcho(%q, %q) = %q, %q; want %q, %q", c.text, c.echo, rest, left, c.rest, c.left)
		}
	}
}

// TestEchoAcrossReads: an echo split across two reads is left out of
// both; what the program printed is not, and the spill file keeps it.
func TestEchoAcrossReads(t *testing.T) {
	s := newStream("stdout", "", 4096, 1, &spiller{parent: t.TempDir(), cap: 1 << 20, budget: 1 << 20})
	s.term = true
	s.write([]byte(">>> "))
	if got := s.next().Text; got != ">>> " {
		t.Fatalf("the prompt: %q", got)
	}
	s.expectEcho(&echo{at: s.length(), text: "print(1)\n", sure: true})
	s.write([]byte("prin"))
	if got := s.next().Text; got != "" {
		t.Errorf("half the echo: %q, want nothing", got)
	}
	s.write([]byte("t(1)\r\n1\r\n>>> "))
	if got := s.next().Text; got != "1\n>>> " {
		t.Errorf("the rest of the echo and the answer: %q, want %q", got, "1\n>>> ")
	}
	s.eof()
	b, err := os.ReadFile(s.spillPath())
	if err != nil || string(b) != ">>> print(1)\r\n1\r\n>>> " {
		t.Errorf("the spill file: %q, %v", b, err)
	}
	s.release()
}

// TestOnTaskWaiting: the listeners hear once each time a task starts
// waiting for input, unless a read showed it first, and never while a
// write's answer is awaited.
func TestOnTaskWaiting(t *testing.T) {
	e := newExec(t, nil)
	heard := make(chan bash.Task, 10)
	defer e.OnTaskWaiting(func(task bash.Task) { heard <- task })()
	waiter := startInput(t, e, bash.ExecRequest{Command: `sleep 0.2; printf 'go? '; read -r a; echo "got $a"; sleep 0.5; printf 'again? '; read -r b; printf 'last? '; read -r c`, Owner: "o"}, nil)
	defer e.Kill(context.Background(), waiter.ID)
	got := testwait.Recv(t, heard, "the news that the task waits")
	if got.ID != waiter.ID || !got.WaitingInput || got.Owner != "o" {
		t.Errorf("heard %+v, want %s waiting", got, waiter.ID)
	}
	// An answer that settles before the next prompt: the prompt is news.
	r, err := e.WriteInput(context.Background(), waiter.ID, bash.Input{Data: []byte("y\n"), Wait: time.Minute, Settle: 50 * time.Millisecond})
	if err != nil || r.Stdout.Text != "go? got y\n" || r.Task.WaitingInput {
		t.Fatalf("the answer: %+v, %v", r, err)
	}
	testwait.Recv(t, heard, "the news that it waits again")
	// An answer that shows it waiting: that is no news.
	r, err = e.WriteInput(context.Background(), waiter.ID, bash.Input{Data: []byte("z\n"), Wait: time.Minute})
	if err != nil || r.Stdout.Text != "again? last? " || !r.Task.WaitingInput {
		t.Fatalf("the answer that shows it waiting: %+v, %v", r, err)
	}
	select {
	case got := <-heard:
		t.Errorf("heard %+v after an answer that showed it waiting", got)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestPythonREPL drives real REPLs, where the machine has them: their
// answers come as soon as they wait again, whole.
func TestPythonREPL(t *testing.T) {
	for _, c := range []struct{ cmd, in, want string }{
		{"python3 -u -i -q", "print(6*7)\n", "42\n"},
		{"node -i", "6*7\n", "42\n"},
	} {
		name := strings.Fields(c.cmd)[0]
		if _, err := exec.LookPath(name); err != nil {
			t.Logf("no %s here", name)
			continue
		}
		for _, tty := range []bool{false, true} {
			e := newExec(t, nil)
			var term *bash.TermSize
			if tty {
				term = &bash.TermSize{}
			}
			task := startInput(t, e, bash.ExecRequest{Command: c.cmd}, term)
			in := bash.Input{Wait: time.Minute, Settle: time.Minute}
			if _, err := e.WriteInput(context.Background(), task.ID, in); err != nil {
				t.Fatal(err)
			}
			in.Data = []byte(c.in)
			r, err := e.WriteInput(context.Background(), task.ID, in)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.Stdout.Text, c.want) || !r.Task.WaitingInput {
				t.Errorf("%s (tty %v): %+v; want an answer that starts %q, waiting", c.cmd, tty, r, c.want)
			}
			if _, err := e.Kill(context.Background(), task.ID); err != nil && !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		}
	}
}

func TestEpollTarget(t *testing.T) {
	for _, c := range []struct {
		line   string
		events uint64
		id     fileID
		ok     bool
	}{
		{"tfd:        0 events:       19 data:                0  pos:0 ino:9840b4 sdev:fe00000\n", 0x19, fileID{dev: unix.Mkdev(254, 0), ino: 0x9840b4}, true},
		{"tfd:       17 events:       19 data:               11  pos:0 ino:40e sdev:10\n", 0x19, fileID{dev: unix.Mkdev(0, 16), ino: 0x40e}, true},
		{"tfd:        3 events:        4 data:                3  pos:0 ino:1 sdev:100123\n", 4, fileID{dev: unix.Mkdev(1, 0x123), ino: 1}, true},
		{"pos:\t0\n", 0, fileID{}, false},
		{"tfd: 0 events: zz data: 0 pos:0 ino:1 sdev:1\n", 0, fileID{}, false},
	} {
		events, id, ok := epollTarget(c.line)
		if events != c.events || id != c.id || ok != c.ok {
			t.Errorf("epollTarget(%q) = %x, %+v, %v; want %x, %+v, %v", c.line, events, id, ok, c.events, c.id, c.ok)
		}
	}
}

// TestEchoInParts: a line typed in parts, the next part written before
// the echo of the first came, is left out whole.
func TestEchoInParts(t *testing.T) {
	s := newStream("stdout", "", 4096, 0, &spiller{parent: t.TempDir(), cap: 1 << 20, budget: 1 << 20})
	s.term = true
	s.expectEcho(&echo{at: 0, text: "ab", sure: true})
	s.expectEcho(&echo{at: 0, text: "c\n", sure: true})
	s.write([]byte("abc\r\ngot abc\r\n"))
	if got := s.next().Text; got != "got abc\n" {
		t.Errorf("a line typed in two parts: %q, want %q", got, "got abc\n")
	}
}

// TestEOFWhilePipeHeld: the end of input written while a copy of the
// pipe's end is open elsewhere (a command started meanwhile, between its
// fork and its exec) leaves the reader blocked until that copy closes.
// The reader is then no wait for input: the call waits on, and answers
// with what the program did once it saw the end.
func TestEOFWhilePipeHeld(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	task := startInput(t, e, bash.ExecRequest{Command: `cat >/dev/null; echo got`, Owner: "o"}, nil)
	tk, err := e.started(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	tk.p.input.mu.Lock()
	held, err := unix.Dup(int(tk.p.input.w.Fd()))
	tk.p.input.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	released := time.AfterFunc(time.Second, func() { unix.Close(held) })
	defer func() {
		if released.Stop() {
			unix.Close(held)
		}
	}()
	r, err := e.WriteInput(context.Background(), task.ID, bash.Input{Data: []byte("x\n"), EOF: true, Wait: testwait.Limit})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout.Text != "got\n" || !r.Task.Done() || r.Task.WaitingInput {
		t.Errorf("the end of input while the pipe is held: stdout %q, task %+v; want %q, ended", r.Stdout.Text, r.Task, "got\n")
	}
}

// TestProbeGone: a task none of whose processes is left is ending (its
// end on its way, from a jail's agent say): no wait for input, and no
// quiet that answers a write either; one asleep is idle.
func TestProbeGone(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	asleep := testwait.Until(func() bool { return probeTask([]int{cmd.Process.Pid}, fileID{}, 0).state == inputIdle })
	if !asleep {
		t.Errorf("sleep 30: %v, want idle", probeTask([]int{cmd.Process.Pid}, fileID{}, 0).state)
	}
	for _, pids := range [][]int{nil, {1 << 30}} {
		if got := probeTask(pids, fileID{}, 0).state; got != inputRunning {
			t.Errorf("processes %v, none of them alive: %v, want running (ending)", pids, got)
		}
	}
}
