package local

import (
	"errors"
	"sync"
	"syscall"
)

// containment is how an executor keeps the processes of each command
// together, so that it can tell when they are all gone and stop all of them.
type containment interface {
	// prepare makes the group for one command before it is spawned; it may
	// set fields of req (CgroupFD).
	prepare(req *SpawnRequest) (group, error)
	kind() Containment
	close() error
}

// group is the set of processes of one command.
type group interface {
	// started is called once after the spawn, with its error. It reports
	// whether the process died before it could run anything (see
	// cgLeaf.started): then the command never ran, and may be started again.
	started(pid int, err error) (unborn bool)
	// signal sends sig to every process of the command; it never fails on
	// processes that are already gone.
	signal(sig syscall.Signal)
	// empty is closed once no process of the command is alive (zombies do not
	// count). It is valid after a successful start.
	empty() <-chan struct{}
	// live reports whether any process of the command is alive now; when
	// it cannot tell, it says true.
	live() bool
	// release frees what the group holds; it is called once, after empty.
	release()
}

// onceChan is a channel closed at most once.
type onceChan struct {
	once sync.Once
	c    chan struct{}
}

func newOnceChan() *onceChan { return &onceChan{c: make(chan struct{})} }

func (o *onceChan) close() { o.once.Do(func() { close(o.c) }) }

var errCgroupUnsupported = errors.New("cgroups are only available on Linux")
