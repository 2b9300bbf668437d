package local

import (
	"syscall"
	"time"
)

// traceeReaper is a Process that may leave zombies only this process can
// reap; the escalation asks it to once ReapBound has passed.
type traceeReaper interface{ reapTracees() }

// settler is the state of one proc's end: which of the shell, the pipes and
// the group are gone, and which of the escalation's timers run. A nil
// channel is one no longer waited on.
type settler struct {
	p *proc
	e *Executor

	stopReq, shellDone, pipesDone, empty <-chan struct{}
	graceC, reapC, lingerC, drainC       <-chan time.Time
	timers                               []*time.Timer

	shell, pipes, gone, asked bool
}

// settle runs the escalation when asked and closes done once the shell has
// been reaped, both pipes are at EOF and no process of the command is left
// (or ReapBound has passed since the SIGKILL).
func (p *proc) settle(e *Executor) {
	defer e.wg.Done()
	s := &settler{p: p, e: e, stopReq: p.stopReq, shellDone: p.shellDone, pipesDone: p.pipesDone}
	defer s.stopTimers()
	for !(s.shell && s.pipes && s.gone) {
		if s.shell && s.pipes && !s.asked {
			// Only now: a process group can only be polled for emptiness.
			s.empty, s.asked = p.grp.empty(), true
		}
		s.step()
	}
	p.grp.release()
	p.input.close() // nothing reads it any more
	close(p.done)
}

// step waits for the next event and moves the state on.
func (s *settler) step() {
	select {
	case <-s.stopReq:
		s.onStop()
	case <-s.graceC:
		s.onGrace()
	case <-s.reapC:
		s.reapC = nil
		closeAll(s.p.pipes[:]...)
		s.gone = true // give up on what we cannot see die
		if r, ok := s.p.shell.(traceeReaper); ok && !s.shell {
			r.reapTracees()
		}
	case <-s.shellDone:
		s.onShell()
	case <-s.lingerC:
		s.onLinger()
	case <-s.drainC:
		s.drainC = nil
		close(s.p.lingering)
	case <-s.pipesDone:
		s.pipesDone, s.pipes = nil, true
	case <-s.empty:
		s.empty, s.gone = nil, true
	}
}

// onStop sends SIGTERM and starts the grace period; a foreground run that
// is being stopped no longer lingers.
func (s *settler) onStop() {
	s.stopReq, s.lingerC, s.drainC = nil, nil, nil
	s.p.grp.signal(syscall.SIGTERM)
	s.graceC = s.timer(s.e.grace)
}

// onLinger ends a foreground run's wait for leftovers: processes of the
// command still alive are adopted (Run takes lingering as its cue). When
// none is, there is nothing to adopt, only output still to read: on a
// loaded machine the readers may be behind the shell's exit. Then the run
// waits for its pipes up to ReapBound more, and adopts only what holds
// them after that (a process outside the command's group).
func (s *settler) onLinger() {
	s.lingerC = nil
	if s.p.grp.live() {
		close(s.p.lingering)
		return
	}
	s.drainC = s.timer(s.e.reapBound)
}

// onGrace sends SIGKILL and starts the reap bound.
func (s *settler) onGrace() {
	s.graceC = nil
	s.p.grp.signal(syscall.SIGKILL)
	s.reapC = s.timer(s.e.reapBound)
}

// onShell notes the shell's end and, for a foreground run not being
// stopped, starts the wait for leftovers.
func (s *settler) onShell() {
	s.shellDone, s.shell = nil, true
	if s.p.linger > 0 && s.stopReq != nil {
		s.lingerC = s.timer(s.p.linger)
	}
}

func (s *settler) timer(d time.Duration) <-chan time.Time {
	t := time.NewTimer(d)
	s.timers = append(s.timers, t)
	return t.C
}

func (s *settler) stopTimers() {
	for _, t := range s.timers {
		t.Stop()
	}
}
