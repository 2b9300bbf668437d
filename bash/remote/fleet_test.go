//go:build linux

package remote

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
)

// pipeHost is a fleet host whose servers run in this process: each dial
// serves a new local executor with the suite's knobs over pipes.
type pipeHost struct {
	t    *testing.T
	c    bashtest.Config
	done []chan struct{}
}

func (p *pipeHost) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	cli, _, done, err := servePipe(p.t, localOptions(p.t, p.c))
	if err != nil {
		return nil, err
	}
	p.done = append(p.done, done)
	return cli, nil
}

// servedFleet is a fleet whose Close also waits for its servers, within
// testwait.Limit each.
type servedFleet struct {
	*Fleet
	hosts []*pipeHost
}

func (s *servedFleet) Close() error {
	err := s.Fleet.Close()
	for _, h := range s.hosts {
		for _, d := range h.done {
			if _, werr := testwait.Wait(d, "return of a host's Serve once the fleet closed"); err == nil {
				err = werr
			}
		}
	}
	return err
}

// overFleet makes a fleet of n hosts over pipes. The task limits are
// each host's; a fleet's limit per executor is the sum, so the suite's
// per-executor limit applies to the fleet only with one host.
func overFleet(n int) bashtest.NewFunc {
	return func(t *testing.T, c bashtest.Config) bash.Executor {
		sf := &servedFleet{}
		var hosts []Host
		for i := 0; i < n; i++ {
			h := &pipeHost{t: t, c: c}
			sf.hosts = append(sf.hosts, h)
			hosts = append(hosts, Host{Dial: h.dial, Options: Options{Host: "pipe"}})
		}
		f, err := NewFleet(hosts)
		if err != nil {
			t.Fatal(err)
		}
		sf.Fleet = f
		return sf
	}
}

// TestFleetConformance runs the executor contract, and the shared
// transcript, against a fleet of one host (with more, the limit on all
// tasks is each host's, which the transcript's step at that limit shows).
func TestFleetConformance(t *testing.T) {
	t.Parallel()
	proctest.Long(t)
	bashtest.Run(t, overFleet(1))
	toolbashtest.Transcript(t, overFleet(1), "../../toolbash/toolbashtest/testdata/transcript.txtar", false)
}

// TestFleetLoadCountsEndedTasks: tasks that end before their start's
// reply is handled (their end overtakes it) are not counted as running.
func TestFleetLoadCountsEndedTasks(t *testing.T) {
	t.Parallel()
	f := overFleet(1)(t, bashtest.Config{Cwd: t.TempDir(), Timeout: time.Minute, MaxTimeout: time.Minute,
		Grace: time.Second, DrainDelay: 50 * time.Millisecond, MaxOutputBytes: 4096, MaxTasksPerOwner: 64, MaxTasks: 64}).(*servedFleet)
	defer f.Close()
	const n = 100
	done := make(chan struct{}, n)
	f.OnTaskDone(func(bash.Task) { done <- struct{}{} })
	for i := 0; i < n; i++ {
		start(t, f, resolve(t, f, "true", "s"))
	}
	for i := 0; i < n; i++ {
		testwait.Recv(t, done, fmt.Sprintf("end of task %d of %d", i+1, n))
	}
	if load := f.Fleet.hosts[0].load(); load != 0 {
		t.Errorf("%d ended tasks still count as running", load)
	}
}

// TestWaitingRelayed: the far side's news that a task waits for input
// reaches the client's OnTaskWaiting listeners, under the client's own
// task id, through one connection and through a fleet.
func TestWaitingRelayed(t *testing.T) {
	t.Parallel()
	c := bashtest.Config{Cwd: t.TempDir(), Timeout: time.Minute, MaxTimeout: time.Minute,
		Grace: time.Second, DrainDelay: 50 * time.Millisecond, MaxOutputBytes: 4096, MaxTasksPerOwner: 8, MaxTasks: 8}
	for name, newExec := range map[string]bashtest.NewFunc{"pipe": overPipe, "fleet": overFleet(1)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newExec(t, c)
			defer e.Close()
			heard := make(chan bash.Task, 4)
			defer e.(interface {
				OnTaskWaiting(func(bash.Task)) func()
			}).OnTaskWaiting(func(task bash.Task) { heard <- task })()
			start(t, e, resolve(t, e, "true", "s")) // bash-1: so that ids differ from the far side's
			spec := resolve(t, e, `printf 'name? '; read -r n`, "s")
			spec.Input = true
			task := start(t, e, spec)
			got := testwait.Recv(t, heard, "the news that the task waits")
			if got.ID != task.ID || !got.WaitingInput || got.Owner != "s" {
				t.Errorf("heard %+v, want %s waiting", got, task.ID)
			}
		})
	}
}
