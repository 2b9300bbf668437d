package sandbox

import (
	"runtime"
	"sync"
)

// spawner starts the processes that start jails (bwrap, the Landlock
// layer's agent) from an OS thread that lives as long as the jails: each
// dies with its parent thread, not its parent process (bwrap's
// --die-with-parent and the agent's Pdeathsig are PR_SET_PDEATHSIG), and
// Go ends a thread whose goroutine exits locked to it, as the host's
// thread that enters a warm jail's mount namespace does (mountIn): a
// jail started from any thread could die when that thread was reused,
// and ended. One start at a time.
//
// A thread that could not leave a jail's cgroups after a start (startIn)
// starts nothing more, and stays until the spawner closes; another takes
// its place.
type spawner struct {
	mu     sync.Mutex
	calls  chan func() (stuck bool) // the current thread's
	parks  []chan struct{}          // each thread's, closed at close
	wg     sync.WaitGroup
	closed bool
}

// start runs start on the spawner's thread, moved into cg for the while
// (limits.startIn), and returns its error.
func (s *spawner) start(limits *limiter, cg jailCgroups, start func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errJailGone
	}
	if s.calls == nil {
		s.calls = make(chan func() bool)
		park := make(chan struct{})
		s.parks = append(s.parks, park)
		s.wg.Add(1)
		go s.thread(s.calls, park)
	}
	var err error
	var stuck bool
	done := make(chan struct{})
	s.calls <- func() bool {
		defer close(done)
		err, stuck = limits.startIn(cg, start)
		return stuck
	}
	<-done
	if stuck {
		close(s.calls) // its thread waits for close
		s.calls = nil
	}
	return err
}

// thread runs calls until its channel closes, or one leaves it stuck in
// a jail's cgroups; then waits for park (the spawner's close) and ends.
func (s *spawner) thread(calls chan func() bool, park chan struct{}) {
	defer s.wg.Done()
	runtime.LockOSThread() // for good: the thread ends after its jails
	for call := range calls {
		if call() {
			break
		}
	}
	<-park
}

// close ends the spawner's threads: after every jail they started.
func (s *spawner) close() {
	s.mu.Lock()
	s.closed = true
	if s.calls != nil {
		close(s.calls)
		s.calls = nil
	}
	for _, park := range s.parks {
		close(park)
	}
	s.parks = nil
	s.mu.Unlock()
	s.wg.Wait()
}
