//go:build !linux

package execguard

import "errors"

// Tree is a process tree traced by a thread of its own (Linux only).
type Tree struct{}

// Start fails: tracing every exec needs Linux.
func Start(func() (int, error), Options) (*Tree, error) {
	return nil, errors.New("execguard: checking every exec needs Linux")
}

// Pid is the first process's pid.
func (*Tree) Pid() int { return 0 }

// Wait waits for the first process to end.
func (*Tree) Wait() Status { return 0 }

// Done is closed once no process of the tree is left.
func (*Tree) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// HardenThread fails: it needs Linux.
func HardenThread() error { return errors.New("execguard: needs Linux") }

// Cwd is the process's working directory (Linux only).
func (Exec) Cwd() string { return "" }

// ErrNoLandlock: the kernel has no Landlock (Linux only).
var ErrNoLandlock = errors.New("deny rules at exec need Landlock")
