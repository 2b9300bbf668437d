//go:build linux

package bashtest

import (
	"context"
	"sync"

	"github.com/dshgo/dsh/bash"
)

// recorder is the executor under test as the suite's tests use it: it
// notes every task id that Start and Run hand out, so that a listener that
// hears of the end of an id nobody was given (ids mixed up, as a remote
// executor could mix them) fails the test at once rather than after a
// wait for the right id that never comes.
type recorder struct {
	bash.Executor

	mu       sync.Mutex
	given    map[bash.TaskID]bool
	inFlight int // Start and Run calls not returned yet
}

func newRecorder(e bash.Executor) *recorder {
	return &recorder{Executor: e, given: map[bash.TaskID]bool{}}
}

func (r *recorder) Start(ctx context.Context, spec bash.ExecSpec) (bash.Task, error) {
	r.begin()
	t, err := r.Executor.Start(ctx, spec)
	r.end(t.ID)
	return t, err
}

func (r *recorder) Run(ctx context.Context, spec bash.ExecSpec) (bash.RunResult, error) {
	r.begin()
	res, err := r.Executor.Run(ctx, spec)
	r.end(res.Adopted)
	return res, err
}

func (r *recorder) begin() {
	r.mu.Lock()
	r.inFlight++
	r.mu.Unlock()
}

func (r *recorder) end(id bash.TaskID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	if id != "" {
		r.given[id] = true
	}
}

// stranger reports whether id was never handed out, while no call that
// could still hand it out is in flight.
func (r *recorder) stranger(id bash.TaskID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlight == 0 && !r.given[id]
}
