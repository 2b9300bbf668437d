package execguard

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

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
	// onEnd, if set, is told of each tracee's end.
	onEnd func(pid int, ws unix.WaitStatus)
}

func newTracer(o *Options) *tracer {
	return &tracer{o: o, known: map[int]bool{}}
}

// adopt takes over a process started with PTRACE_TRACEME, stopped at
// its first exec: from now on it and every process it makes are traced.
func (t *tracer) adopt(pid int) error {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait for the traced process: %w", err)
		}
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		return fmt.Errorf("the traced process did not stop at its exec (status %#x)", uint32(ws))
	}
	if err := unix.PtraceSetOptions(pid, traceOptions); err != nil {
		return fmt.Errorf("trace the process's children: %w", err)
	}
	t.known[pid] = true
	return unix.PtraceCont(pid, 0)
}

// event handles one wait status of a tracee.
func (t *tracer) event(pid int, ws unix.WaitStatus) {
	switch {
	case ws.Exited() || ws.Signaled():
		delete(t.known, pid)
		if t.onEnd != nil {
			t.onEnd(pid, ws)
		}
		return
	case !ws.Stopped():
		return
	}
	sig := ws.StopSignal()
	if !t.known[pid] {
		// A new process or thread: it starts stopped by a SIGSTOP that
		// nobody sent.
		t.known[pid] = true
		if sig == unix.SIGSTOP {
			_ = unix.PtraceCont(pid, 0)
			return
		}
	}
	if sig == unix.SIGTRAP && ws.TrapCause() > 0 {
		t.trap(pid, ws.TrapCause())
		return
	}
	if isStopSignal(sig) && groupStop(pid) {
		// Job control: a tracee not seized cannot be told when SIGCONT
		// comes, so a stop is not kept (see the package comment).
		_ = unix.PtraceCont(pid, 0)
		return
	}
	_ = unix.PtraceCont(pid, int(sig)) // the signal, delivered
}

// trap handles a ptrace event stop.
func (t *tracer) trap(pid, cause int) {
	if cause != unix.PTRACE_EVENT_EXEC {
		_ = unix.PtraceCont(pid, 0) // fork, vfork, clone: the child is traced
		return
	}
	if former, err := unix.PtraceGetEventMsg(pid); err == nil && int(former) != pid {
		delete(t.known, int(former)) // a thread that exec'd took the leader's pid
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
		t.o.OnRefuse(Refusal{Exec: e, Rule: rule})
	}
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
	e.Dir, _ = os.Readlink(dir + "cwd")
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

// groupStop tells a group-stop from the delivery of a stopping signal:
// only the delivery has siginfo.
func groupStop(pid int) bool {
	var info unix.Siginfo
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(pid), 0, uintptr(unsafe.Pointer(&info)), 0, 0)
	return e == unix.EINVAL
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
	go tr.trace(fork, &o, started)
	if err := <-started; err != nil {
		<-tr.done
		return nil, err
	}
	return tr, nil
}

// trace is the tracer's thread: it never returns it to the runtime, so
// that it is never shared with other goroutines (and it ends with them).
func (tr *Tree) trace(fork func() (int, error), o *Options, started chan<- error) {
	runtime.LockOSThread()
	defer close(tr.done)
	if o.Prepare != nil {
		if err := o.Prepare(); err != nil {
			close(tr.ended)
			started <- fmt.Errorf("execguard: prepare the tracer: %w", err)
			return
		}
	}
	pid, err := fork()
	if err != nil {
		close(tr.ended)
		started <- err
		return
	}
	tr.pid = pid
	t := newTracer(o)
	t.onEnd = func(p int, ws unix.WaitStatus) {
		if p == pid {
			tr.status = ws
			close(tr.ended)
		}
	}
	if err := t.adopt(pid); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		started <- err
		t.drain()
		return
	}
	started <- nil
	t.drain()
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
