//go:build unix

package local

import (
	"sync"
	"syscall"
	"time"
)

// pgroup contains a command by its process group: the shell starts a new
// session, so its pgid is its pid. A descendant that calls setsid or setpgid
// escapes it.
type pgroup struct {
	stop  <-chan struct{} // closed when the executor closes
	alive func(pgid int) bool
	wg    *sync.WaitGroup

	pgid  int
	gone  *onceChan
	probe sync.Once
}

// pgroupContainment makes pgroups; alive reports whether a process group
// still has a live member.
type pgroupContainment struct {
	stop  chan struct{}
	alive func(pgid int) bool
	wg    sync.WaitGroup
}

func newPgroupContainment(alive func(pgid int) bool) *pgroupContainment {
	return &pgroupContainment{stop: make(chan struct{}), alive: alive}
}

func (c *pgroupContainment) kind() Containment { return ContainProcessGroup }

func (c *pgroupContainment) prepare(*SpawnRequest) (group, error) {
	return &pgroup{stop: c.stop, alive: c.alive, wg: &c.wg, gone: newOnceChan()}, nil
}

func (c *pgroupContainment) close() error {
	close(c.stop)
	c.wg.Wait()
	return nil
}

func (g *pgroup) started(pid int, err error) bool {
	if err != nil {
		g.gone.close()
		return false
	}
	g.pgid = pid
	return false
}

func (g *pgroup) signal(sig syscall.Signal) {
	if g.pgid > 0 {
		_ = syscall.Kill(-g.pgid, sig) // ESRCH: nobody left, which is fine
	}
}

// empty polls for the group's last member: the kernel gives no event for a
// process group emptying, so this is the one place that polls, with a
// backoff from 10 ms to 500 ms.
func (g *pgroup) empty() <-chan struct{} {
	g.probe.Do(func() {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			wait := 10 * time.Millisecond
			t := time.NewTimer(0)
			defer t.Stop()
			for {
				select {
				case <-g.gone.c:
					return
				case <-g.stop:
					return
				case <-t.C:
				}
				if !g.alive(g.pgid) {
					g.gone.close()
					return
				}
				t.Reset(wait)
				wait = min(2*wait, 500*time.Millisecond)
			}
		}()
	})
	return g.gone.c
}

func (g *pgroup) live() bool { return g.pgid > 0 && g.alive(g.pgid) }

func (g *pgroup) release() {}
