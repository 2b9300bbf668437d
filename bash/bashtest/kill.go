//go:build linux

package bashtest

import (
	"context"
	"errors"
	"testing"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) killTests(t *testing.T) {
	parallel(t, "running task: true, SIGTERM", s.killRunning)
	parallel(t, "finished task: false", s.killFinished)
	parallel(t, "whole tree, waited for", s.killTree)
	parallel(t, "grandchild that called setsid", s.killSetsid)
	parallel(t, "TERM ignored: SIGKILL after the grace", s.killIgnored)
	parallel(t, "stopped processes", s.killStopped)
	parallel(t, "done context: the task is still stopped", s.killCtxDone)
}

// kill kills a task that must be running.
func (h *harness) kill(id bash.TaskID) {
	h.t.Helper()
	if killed, err := h.e.Kill(h.ctx(), id); !killed || err != nil {
		h.t.Errorf("Kill(%s) = %v, %v; want true", id, killed, err)
	}
}

func (s *suite) killRunning(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.start("env "+h.tag("sleep")+" sleep 30", "alice")
	h.waitLive(h.tag("sleep"))
	h.kill(task.ID)
	h.assertGone("after Kill returned", h.tag("sleep"))
	got := h.get(task.ID)
	if got.Status != bash.StatusKilled || got.Signal != "SIGTERM" || got.ExitCode != -1 || got.Owner != "alice" {
		t.Errorf("after Kill: %+v; want killed by SIGTERM, exit code -1", got)
	}
	if killed, err := h.e.Kill(h.ctx(), task.ID); killed || err != nil {
		t.Errorf("Kill again = %v, %v; want false", killed, err)
	}
}

func (s *suite) killFinished(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	task := h.start("exit 5", "")
	h.wait(l, task.ID)
	if killed, err := h.e.Kill(h.ctx(), task.ID); killed || err != nil {
		t.Errorf("Kill of a finished task = %v, %v; want false", killed, err)
	}
	if got := h.get(task.ID); got.Status != bash.StatusCompleted || got.ExitCode != 5 {
		t.Errorf("after Kill: %+v; want still completed with exit code 5", got)
	}
}

// treeCmd is a command whose processes Kill and Close must all stop: a
// child, a grandchild in a subshell that ignores SIGTERM (so only the
// SIGKILL after the grace stops it), and, with setsid, a grandchild in a
// session of its own. It returns the command and the tags of its processes.
func (h *harness) treeCmd(name string, setsid bool) (string, []string) {
	child, stubborn, escaped := h.tag(name+".child"), h.tag(name+".stubborn"), h.tag(name+".setsid")
	cmd := "env " + child + " sleep 30 &\n(trap '' TERM; env " + stubborn + " sleep 31) &\n"
	tags := []string{child, stubborn}
	if setsid {
		cmd += "setsid -f env " + escaped + " sleep 32\n"
		tags = append(tags, escaped)
	}
	return cmd + "wait", tags
}

func (s *suite) killTree(t *testing.T) {
	h := s.shared(t, s.common)
	cmd, tags := h.treeCmd("tree", false)
	task := h.start(cmd, "")
	h.waitLive(tags...)
	h.kill(task.ID)
	h.assertGone("after Kill returned", tags...)
	if got := h.get(task.ID); got.Status != bash.StatusKilled || got.Signal != "SIGTERM" {
		t.Errorf("after Kill: %+v; want the shell killed by SIGTERM", got)
	}
}

func (s *suite) killSetsid(t *testing.T) {
	if s.opts.setsidEscapes {
		t.Skip("the executor says a process that calls setsid escapes it (SetsidEscapes)")
	}
	h := s.shared(t, s.common)
	escaped := h.tag("setsid")
	task := h.start("setsid -f env "+escaped+" sleep 32; exec sleep 30", "")
	h.waitLive(escaped)
	h.kill(task.ID)
	h.assertGone("after Kill returned", escaped)
}

func (s *suite) killIgnored(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.start("trap '' TERM; env "+h.tag("sleep")+" sleep 30", "")
	h.waitLive(h.tag("sleep"))
	h.kill(task.ID)
	h.assertGone("after Kill returned", h.tag("sleep"))
	if got := h.get(task.ID); got.Status != bash.StatusKilled || got.Signal != "SIGKILL" {
		t.Errorf("after Kill: %+v; want killed by SIGKILL", got)
	}
}

// killStopped: a tree whose processes are stopped (SIGSTOP), the shell
// included, is killed all the same.
func (s *suite) killStopped(t *testing.T) {
	h := s.shared(t, s.common)
	child, gate := h.tag("child"), h.fifo("gate")
	task := h.start("env "+child+" sleep 30 & read < "+quote(gate)+"; kill -STOP $! $$", "")
	h.waitLive(child)
	h.release(gate)
	h.waitStopped(child)
	h.kill(task.ID)
	h.assertGone("after Kill returned", child)
	if got := h.get(task.ID); got.Status != bash.StatusKilled || got.Signal == "" {
		t.Errorf("after Kill: %+v; want killed by a signal", got)
	}
}

// killCtxDone: Kill with a done context gives up waiting (the task ignores
// SIGTERM, so its end is a grace away) but still stops the task.
func (s *suite) killCtxDone(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	task := h.start("trap '' TERM; env "+h.tag("sleep")+" sleep 30", "")
	h.waitLive(h.tag("sleep"))
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := h.e.Kill(ctx, task.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("Kill with a done context: %v; want an error wrapping context.Canceled", err)
	}
	if end := h.wait(l, task.ID); end.Status != bash.StatusKilled || end.Signal != "SIGKILL" {
		t.Errorf("the task ended %+v; want killed by SIGKILL", end)
	}
	h.assertGone("after the task ended", h.tag("sleep"))
}
