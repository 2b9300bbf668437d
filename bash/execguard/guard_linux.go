package execguard

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// traceOptions: every process and thread of the tree is traced from its
// birth, each exec stops, and the tree dies with its tracer, so that no
// process of it can ever run untraced.
const traceOptions = unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACECLONE |
	unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL

// tracer handles the wait statuses of one tracer thread's tracees.
type tracer struct {
	o     *Options
	known map[int]bool // tracees seen stopped once (their first stop is their birth's)
	root  map[int]int  // each tracee's tree: the adopted process it descends from
	// onEnd, if set, is told of each tracee's end.
	onEnd func(pid int, ws unix.WaitStatus)
}

func newTracer(o *Options) *tracer {
	return &tracer{o: o, known: map[int]bool{}, root: map[int]int{}}
}

// rootOf is the adopted process whose tree pid is in: known from the fork
// event, or, for a process whose first stop came before its parent's
// fork event did, from its thread group or its parent; 0 if unknown.
func (t *tracer) rootOf(pid int) int {
	if r, ok := t.root[pid]; ok {
		return r
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if k != "Tgid" && k != "PPid" {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n != pid {
			if r, ok := t.root[n]; ok {
				t.root[pid] = r
				return r
			}
		}
	}
	return 0
}

// adopt takes over a process started with PTRACE_TRACEME, stopped at
// its first exec: from now on it and every process it makes are traced,
// seized (PTRACE_SEIZE), so that job control works under the tracer (a
// group-stop is kept until SIGCONT, with PTRACE_LISTEN). A process that
// made itself a tracee cannot be seized, so it is let go with a SIGSTOP
// pending, which stops it before its first instruction, and seized
// stopped; no instruction of it runs untraced.
func (t *tracer) adopt(pid int, stopped func(int) error) error {
	ws, err := waitFor(pid)
	if err != nil {
		return err
	}
	if ws.Exited() || ws.Signaled() {
		return fmt.Errorf("%w before its first exec (status %#x)", errGone, uint32(ws))
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		return fmt.Errorf("the traced process did not stop at its exec (status %#x)", uint32(ws))
	}
	if stopped != nil {
		if err := stopped(pid); err != nil {
			return err
		}
	}
	if err := ptrace(unix.PTRACE_DETACH, pid, 0, uintptr(unix.SIGSTOP)); err != nil {
		return fmt.Errorf("let the process go to seize it: %w", err)
	}
	if err := ptrace(unix.PTRACE_SEIZE, pid, 0, traceOptions); err != nil {
		return fmt.Errorf("seize the process: %w", err)
	}
	if ws, err = waitFor(pid); err != nil {
		return err
	}
	switch {
	case stopEvent(ws) == unix.PTRACE_EVENT_STOP: // stopped before the seize
		_ = unix.Kill(pid, unix.SIGCONT) // ends the group-stop; delivered as any signal
	case !ws.Stopped() || ws.StopSignal() != unix.SIGSTOP:
		return fmt.Errorf("the seized process did not stop (status %#x)", uint32(ws))
	} // else: the SIGSTOP, not yet delivered: it is dropped
	t.known[pid] = true
	t.root[pid] = pid
	return unix.PtraceCont(pid, 0)
}

// errGone: the process to adopt has ended (and been reaped: its pid may
// be another's already).
var errGone = errors.New("execguard: the traced process ended")

// waitFor waits for one wait status of pid.
func waitFor(pid int) (unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				err = fmt.Errorf("wait for the traced process: %w", err)
			}
			return ws, err
		}
	}
}

func ptrace(req, pid int, addr, data uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// stopEvent is the ptrace event of a stop (PTRACE_EVENT_*), 0 for none.
func stopEvent(ws unix.WaitStatus) int { return int(uint32(ws) >> 16) }

// event handles one wait status of a tracee.
func (t *tracer) event(pid int, ws unix.WaitStatus) {
	switch {
	case ws.Exited() || ws.Signaled():
		delete(t.known, pid)
		delete(t.root, pid)
		if t.onEnd != nil {
			t.onEnd(pid, ws)
		}
		return
	case !ws.Stopped():
		return
	}
	sig, ev := ws.StopSignal(), stopEvent(ws)
	switch {
	case ev == unix.PTRACE_EVENT_STOP:
		t.eventStop(pid, sig)
	case ev != 0:
		t.trap(pid, ev)
	default:
		// A signal, delivered; a stopping one then stops the group, which
		// is reported as PTRACE_EVENT_STOP.
		_ = unix.PtraceCont(pid, int(sig))
	}
}

// eventStop handles a PTRACE_EVENT_STOP: a new tracee's first stop, a
// group-stop (kept, listening for SIGCONT), or the end of one.
func (t *tracer) eventStop(pid int, sig unix.Signal) {
	if !t.known[pid] {
		t.known[pid] = true
		_ = unix.PtraceCont(pid, 0)
		return
	}
	if isStopSignal(sig) {
		_ = ptrace(unix.PTRACE_LISTEN, pid, 0, 0)
		return
	}
	_ = unix.PtraceCont(pid, 0)
}

// trap handles a ptrace event stop.
func (t *tracer) trap(pid, cause int) {
	msg, err := unix.PtraceGetEventMsg(pid)
	if cause != unix.PTRACE_EVENT_EXEC { // (not PTRACE_EVENT_STOP: see eventStop)
		// fork, vfork, clone: the child is traced already; msg is its pid
		if r := t.rootOf(pid); err == nil && r != 0 && cause != unix.PTRACE_EVENT_VFORK_DONE {
			t.root[int(msg)] = r
		}
		_ = unix.PtraceCont(pid, 0)
		return
	}
	if err == nil && int(msg) != pid {
		delete(t.known, int(msg)) // a thread that exec'd took the leader's pid
		delete(t.root, int(msg))
	}
	e, err := readExec(pid)
	rule := ""
	if err != nil {
		rule = "(what it runs could not be read: " + err.Error() + ")"
	} else {
		rule = t.o.Check(e)
	}
	if rule == "" {
		_ = unix.PtraceCont(pid, 0)
		return
	}
	_ = unix.Kill(pid, unix.SIGKILL) // before its first instruction
	if t.o.OnRefuse != nil {
		t.o.OnRefuse(Refusal{Exec: e, Rule: rule, Root: t.rootOf(pid)})
	}
}

// Cwd is the process's working directory, read when asked for (most
// checks need none); empty when unknown.
func (e Exec) Cwd() string {
	d, _ := os.Readlink("/proc/" + strconv.Itoa(e.Pid) + "/cwd")
	return d
}

// readExec reads what a process stopped at its exec is about to run.
func readExec(pid int) (Exec, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	e := Exec{Pid: pid}
	exe, err := os.Readlink(dir + "exe")
	if err != nil {
		return e, err
	}
	e.Path = strings.TrimSuffix(exe, " (deleted)")
	b, err := os.ReadFile(dir + "cmdline")
	if err != nil {
		return e, err
	}
	e.Argv = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	var st unix.Stat_t
	if err := unix.Stat(dir+"exe", &st); err != nil {
		return e, err
	}
	e.File = FileID{Dev: st.Dev, Ino: st.Ino, Size: st.Size}
	return e, nil
}

func isStopSignal(sig unix.Signal) bool {
	return sig == unix.SIGSTOP || sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU
}

// Tracer traces trees for a caller that runs its own wait loop on the
// thread that starts them: a process that reaps more than the trees (a
// pid 1, a subreaper) and forks many. Each method must be called from
// that one thread, which must stay locked to its goroutine.
type Tracer struct{ t *tracer }

// NewTracer makes a Tracer; o.Prepare is not used.
func NewTracer(o Options) (*Tracer, error) {
	if o.Check == nil {
		return nil, errors.New("execguard: Options.Check is nil")
	}
	return &Tracer{t: newTracer(&o)}, nil
}

// Adopt takes over a process this thread has just started with
// SysProcAttr.Ptrace: it waits for the process to stop at its exec, and
// from then on traces it and every process it makes. The process is the
// root of its tree (Refusal.Root). stopped, if set, is the process's
// Options.Stopped. When Adopt fails, the process and its session have
// been killed (the tracer reaps them, as any tracee).
func (t *Tracer) Adopt(pid int, stopped func(pid int) error) error {
	err := t.t.adopt(pid, stopped)
	if err != nil && !errors.Is(err, errGone) {
		_ = unix.Kill(-pid, unix.SIGKILL)
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	return err
}

// Handle handles one wait status, which the caller got with __WALL from
// wait4 on this thread. It reports whether the status was a tracee's stop,
// which Handle dealt with; any other status (an end) is the caller's,
// after Handle has forgotten the process.
func (t *Tracer) Handle(pid int, ws unix.WaitStatus) (stop bool) {
	t.t.event(pid, ws)
	return ws.Stopped()
}

// Tree is a process tree traced by a thread of its own.
type Tree struct {
	pid    int
	status unix.WaitStatus
	ended  chan struct{} // the first process has ended: status is set
	done   chan struct{} // no process of the tree is left
}

// Start starts a traced tree. fork runs on the tracer's thread: it must
// start the tree's first process with syscall.ForkExec (or
// syscall.StartProcess) with SysProcAttr.Ptrace set, and return its pid.
// That thread is the tree's tracer until no process of the tree is left;
// if this process dies, the kernel kills the tree (PTRACE_O_EXITKILL).
func Start(fork func() (int, error), o Options) (*Tree, error) {
	if o.Check == nil {
		return nil, errors.New("execguard: Options.Check is nil")
	}
	tr := &Tree{ended: make(chan struct{}), done: make(chan struct{})}
	started := make(chan error, 1)
	go tr.trace(fork, &o, started, nil)
	if err := <-started; err != nil {
		<-tr.done
		return nil, err
	}
	return tr, nil
}

// trace is the tracer's thread: it never returns it to the runtime, so
// that it is never shared with other goroutines (and it ends with them).
func (tr *Tree) trace(fork func() (int, error), o *Options, started chan<- error, prev chan<- struct{}) {
	runtime.LockOSThread()
	if prev != nil {
		close(prev) // the goroutine before may give its thread back
	}
	if !usableThread() {
		// Keep this thread until the next goroutine holds another, then
		// give it back: a thread that ends hands its children to another
		// thread of the process, which may be a tracer's.
		next := make(chan struct{})
		go tr.trace(fork, o, started, next)
		<-next
		runtime.UnlockOSThread()
		return
	}
	defer close(tr.done)
	pid, err := tr.start(fork, o)
	if err != nil {
		close(tr.ended)
		started <- err
		return
	}
	t := newTracer(o)
	ended := false
	t.onEnd = func(p int, ws unix.WaitStatus) {
		if p == pid && !ended { // a later process may get the same pid
			ended = true
			tr.status = ws
			close(tr.ended)
		}
	}
	if err := t.adopt(pid, o.Stopped); err != nil {
		if !errors.Is(err, errGone) {
			_ = unix.Kill(-pid, unix.SIGKILL) // its session, with what it started
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		started <- err
		t.drain()
		return
	}
	started <- nil
	t.drain()
}

// start prepares the tracer's thread and forks the tree's first process.
func (tr *Tree) start(fork func() (int, error), o *Options) (int, error) {
	if o.Prepare != nil {
		if err := o.Prepare(); err != nil {
			return 0, fmt.Errorf("execguard: prepare the tracer: %w", err)
		}
	}
	pid, err := fork()
	tr.pid = pid
	return pid, err
}

// usableThread reports whether the calling thread, locked, may be a
// tracer's: not the process's first (to which the children of threads
// that end go), and with no child. The tracer waits for any child of its
// thread (__WNOTHREAD: its tracees and the first process it forks), so a
// thread that forked a process for other Go code before it was locked
// (os/exec forks on whatever thread the caller is on) would reap that
// process from under its os.Process. A thread locked from now on forks
// nothing else. Where the kernel does not list a thread's children, that
// is not checked.
func usableThread() bool {
	if unix.Gettid() == unix.Getpid() {
		return false
	}
	b, err := os.ReadFile("/proc/thread-self/children")
	return err != nil || len(strings.TrimSpace(string(b))) == 0
}

// drain handles the events of this thread's tracees until none is left.
func (t *tracer) drain() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WALL|unix.WNOTHREAD, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return // ECHILD: none is left
		}
		t.event(pid, ws)
	}
}

// Pid is the first process's pid.
func (tr *Tree) Pid() int { return tr.pid }

// Wait waits for the first process to end and returns its wait status.
func (tr *Tree) Wait() Status {
	<-tr.ended
	return Status(tr.status)
}

// Done is closed once no process of the tree is left.
func (tr *Tree) Done() <-chan struct{} { return tr.done }
