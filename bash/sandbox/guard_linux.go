package sandbox

import (
	"errors"
	"os"
	"sync"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/execguard"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/permission"
	"golang.org/x/sys/unix"
)

// The exec guard of a jail (agentConfig.Deny): the agent's forker thread
// starts every shell traced, and from then on is the tracer of every
// process of the jail and the reaper of all of them, so that no other
// thread's wait takes a tracee's stop. SIGCHLD wakes it; what it reaps
// and the refusals go, in order, to a reporter goroutine, which reports
// them to the host under agent.mu as the reaper did.

// guard is what the forker needs to trace and reap.
type guard struct {
	tracer *execguard.Tracer
	chld   <-chan os.Signal
	rep    *reporter
}

// newGuard makes the guard of deny rules, which it looks up in path.
func newGuard(a *agent, deny []string, path string, chld <-chan os.Signal) (*guard, error) {
	rules, err := permission.NewExecRules(deny, path)
	if err != nil {
		return nil, err
	}
	rep := &reporter{a: a, wake: make(chan struct{}, 1)}
	tr, err := execguard.NewTracer(execguard.Options{
		Check:    local.ExecCheck(rules),
		OnRefuse: func(r execguard.Refusal) { rep.push(report{refusal: &r}) },
	})
	if err != nil {
		return nil, err
	}
	go rep.run()
	return &guard{tracer: tr, chld: chld, rep: rep}, nil
}

// reap takes up to maxReap wait statuses, on the forker's thread: a
// tracee's stop is the tracer's, an end the reporter's. It reports
// whether more may be waiting: a tree that forks without pause must not
// keep the forker from starting other shells.
func (g *guard) reap() (more bool) {
	for range maxReap {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return false
		}
		if !g.tracer.Handle(pid, ws) {
			g.rep.push(report{pid: pid, ws: ws})
		}
	}
	return true
}

// maxReap bounds the wait statuses the forker takes between two calls.
const maxReap = 64

// report is an end or a refusal.
type report struct {
	pid     int
	ws      unix.WaitStatus
	refusal *execguard.Refusal
}

// reporter hands reports to the agent in the order they came.
type reporter struct {
	a    *agent
	mu   sync.Mutex
	q    []report
	wake chan struct{}
}

func (r *reporter) push(p report) {
	r.mu.Lock()
	r.q = append(r.q, p)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reporter) run() {
	for range r.wake {
		r.mu.Lock()
		q := r.q
		r.q = nil
		r.mu.Unlock()
		for _, p := range q {
			if p.refusal != nil {
				r.a.refused(p.refusal)
			} else {
				r.a.ended(p.pid, p.ws)
			}
		}
	}
}

// refused tells the host of a refusal in a shell's tree.
func (a *agent) refused(r *execguard.Refusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := a.shells[r.Root]
	if !ok {
		return // a tree whose shell has ended: its end was reported
	}
	f := local.ShortRefusal(bash.Refusal{Program: r.Path, Argv: r.Argv, Rule: r.Rule})
	_ = sendMsg(a.sock, agentMsg{ID: id, Refused: &f}, nil)
}
