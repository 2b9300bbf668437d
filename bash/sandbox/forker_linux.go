package sandbox

import (
	"fmt"
	"runtime"
	"strconv"

	"github.com/dshgo/dsh/bash/execguard"
	"golang.org/x/sys/unix"
)

// forker starts the agent's shells, every one from the same OS thread,
// which the agent keeps for that alone. In a fenced jail (see fence) that
// thread carries the fence's filter, and so does every process it forks,
// and theirs; the agent's other threads do not, so nothing the agent does
// itself waits on the host. (The Go runtime never clones a new thread
// from one locked with LockOSThread, but from a clean one.)
//
// With a guard, the thread is also the tracer of every shell it starts,
// and the reaper of every process of the agent (see guard_linux.go).
type forker struct {
	calls chan func()
	guard *guard
	// usernsErr: why the shells of the Landlock layer's forker can make
	// user namespaces (see clone3Guard).
	usernsErr string
	// clone3, in the Landlock layer: the listener of the thread's clone3
	// filter, for the host to answer (-1: none); tid: the thread's id.
	clone3, tid int
}

// startForker starts the forker's thread, restricts it with ruleset (a
// jail's Landlock rules, which its shells inherit) and, with fence,
// installs the fence's filter on it: it returns the filter's listener, which the host
// is to supervise, or -1 and why it cannot be (why, a reason there is
// already, or the kernel's), where noUnixProgram stands in for it. With
// clone3 (agentConfig.clone3Guarded), it puts the thread's clone3 under
// supervision, the host's (see clone3Guard).
func startForker(fence, clone3 bool, why error, g *guard, ruleset landlockRuleset) (f *forker, listener int, _ error, err error) {
	f = &forker{calls: make(chan func()), guard: g, clone3: -1}
	type setup struct {
		listener  int
		why, fail error
	}
	done := make(chan setup, 1)
	go func() {
		runtime.LockOSThread() // for good: the thread ends with the agent
		s := setup{listener: -1, why: why, fail: ruleset.restrictThread()}
		switch {
		case s.fail != nil:
		case fence && why == nil:
			s.listener, s.why, s.fail = installFence()
		case fence:
			s.fail = installNoUnix()
		}
		if s.fail == nil && g != nil {
			// What the forker starts stays in its tracer's sight.
			s.fail = execguard.CloneFilter()
		}
		if s.fail == nil && clone3 {
			f.tid = unix.Gettid()
			var why error
			if f.clone3, why = guardClone3(); why != nil {
				f.usernsErr = why.Error()
			}
		}
		done <- s
		if s.fail != nil {
			return
		}
		f.loop()
	}()
	s := <-done
	return f, s.listener, s.why, s.fail
}

// loop runs the calls and, with a guard, reaps whenever SIGCHLD comes.
func (f *forker) loop() {
	if f.guard == nil {
		for call := range f.calls {
			call()
		}
		return
	}
	more := false
	for {
		if more {
			select { // a call first, if one waits; then the rest
			case call := <-f.calls:
				call()
			default:
			}
			more = f.guard.reap()
			continue
		}
		select {
		case call := <-f.calls:
			call()
		case <-f.guard.chld:
			more = f.guard.reap()
		}
	}
}

// adopt, on the forker's thread, has the guard trace a shell it has just
// started with SysProcAttr.Ptrace, and moves it into its command's
// cgroup (procs, its cgroup.procs; -1: none) before its first
// instruction; the shell is killed if either fails (by Adopt).
func (f *forker) adopt(pid, procs int) error {
	err := f.guard.tracer.Adopt(pid, func(pid int) error {
		if procs < 0 {
			return nil
		}
		_, err := unix.Write(procs, []byte(strconv.Itoa(pid)))
		if err != nil {
			err = fmt.Errorf("move the shell into its cgroup: %w", err)
		}
		return err
	})
	return err // Adopt killed it
}

// do runs call on the forker's thread and returns when it has.
func (f *forker) do(call func()) {
	done := make(chan struct{})
	f.calls <- func() {
		defer close(done)
		call()
	}
	<-done
}

// installFence installs the fence's filter on the calling thread alone,
// with a listener for the host, whose waits for the host's answer only a
// fatal signal ends (so that the host never makes a call twice for a
// command a signal interrupted). Where the kernel cannot (before 5.19,
// or the agent is under another supervisor's filter already), it
// installs noUnixProgram instead and says why; fail is an error of that.
func installFence() (listener int, why, fail error) {
	prog, err := fenceProgram()
	if err != nil {
		return -1, nil, err
	}
	listener, err = execguard.ThreadFilter(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	if err == nil {
		return listener, nil, nil
	}
	why = fmt.Errorf("the kernel cannot supervise the jail's system calls (%w): unix sockets are refused", err)
	if err := installNoUnix(); err != nil {
		return -1, nil, err
	}
	return -1, why, nil
}

// installNoUnix installs noUnixProgram on the calling thread alone.
func installNoUnix() error {
	prog, err := noUnixProgram()
	if err == nil {
		_, err = execguard.ThreadFilter(prog, 0)
	}
	if err != nil {
		return fmt.Errorf("install the seccomp filter of the unix sockets: %w", err)
	}
	return nil
}
