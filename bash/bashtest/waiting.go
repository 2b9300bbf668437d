//go:build linux

package bashtest

import (
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

// waitingTests: a task that waits for input says so, and WriteInput
// returns once it does, with its whole answer, not after a guess at
// quiet. Every executor of this module reads the kernel's state of its
// tasks' processes (the remote one on the far side).
func (s *suite) waitingTests(t *testing.T) {
	parallel(t, "a prompt read from a pipe", s.waitingPipe)
	parallel(t, "a prompt read in a terminal, by readline", s.waitingReadline)
	parallel(t, "a read with a timeout (select) waits too", s.waitingSelect)
	parallel(t, "asleep, or busy, is not waiting", s.notWaiting)
	parallel(t, "bursts with gaps: the answer is whole", s.waitingBursts)
	parallel(t, "work after the read, before the next: the answer is whole", s.waitingWork)
	parallel(t, "a program that polls its input: answered after the settle", s.waitingPolls)
	parallel(t, "the end of input: answered at the program's end", s.waitingEOF)
	parallel(t, "part of a line in a terminal: still waiting", s.waitingPartLine)
	parallel(t, "a wait for input with a timeout soon is not only that", s.waitingTimed)
	parallel(t, "a raw-mode program's own output is kept", s.waitingRawOutput)
}

// writeWait is write with a settle too long to pass in a test: a call
// that returns before it knew the task waits for input.
func (h *harness) writeWait(id bash.TaskID, data string) (bash.TaskRead, time.Duration) {
	h.t.Helper()
	start := time.Now()
	r, err := h.e.WriteInput(h.ctx(), id, bash.Input{Data: []byte(data), Wait: waitLimit, Settle: waitLimit})
	if err != nil {
		h.t.Fatalf("WriteInput(%s, %q): %v", id, data, err)
	}
	return r, time.Since(start)
}

// answered checks the answer to one write of a task that then waits for
// input again: its text, its status, and that it came before the settle.
func (h *harness) answered(what string, r bash.TaskRead, took time.Duration, stdout string) {
	h.t.Helper()
	if r.Stdout.Text != stdout || !r.Task.WaitingInput || r.Task.Done() {
		h.t.Errorf("%s: stdout %q, task %+v; want %q, running and waiting for input", what, r.Stdout.Text, r.Task, stdout)
	}
	if took > waitLimit/2 {
		h.t.Errorf("%s: the answer took %v: the executor did not see the task wait for input", what, took)
	}
}

func (s *suite) waitingPipe(t *testing.T) {
	h := s.harness(t, nil)
	task := h.startInput(`printf 'name? '; read -r n; echo "hello $n"; printf 'again? '; read -r m`, "")
	r, took := h.writeWait(task.ID, "")
	h.answered("the first prompt", r, took, "name? ")
	if got := h.get(task.ID); !got.WaitingInput {
		t.Errorf("Get while it waits: %+v, want WaitingInput", got)
	}
	if list := h.list(); len(list) != 1 || !list[0].WaitingInput {
		t.Errorf("List while it waits: %+v, want it waiting", list)
	}
	r, took = h.writeWait(task.ID, "bob\n")
	h.answered("the answer", r, took, "hello bob\nagain? ")
	r = h.write(task.ID, "x\n", false)
	if r.Task.WaitingInput {
		t.Errorf("a task past its last read: %+v, want it not waiting", r.Task)
	}
}

// waitingReadline: bash's read -e edits the line with readline, which
// puts the terminal in raw mode, waits in pselect and draws what is
// typed; the answer leaves that echo out.
func (s *suite) waitingReadline(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startTerminal(`read -e -r -p 'name? ' n; echo "hello $n"; read -e -r -p 'again? ' m`)
	r, took := h.writeWait(task.ID, "")
	h.answered("the first prompt", r, took, "name? ")
	r, took = h.writeWait(task.ID, "bob\n")
	h.answered("the answer", r, took, "hello bob\nagain? ")
}

func (s *suite) waitingSelect(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startInput(`echo ready; read -r -t 60 n; echo "got $n"; read -r -t 60 m`, "")
	r, took := h.writeWait(task.ID, "")
	h.answered("before the read", r, took, "ready\n")
	r, took = h.writeWait(task.ID, "it\n")
	h.answered("the answer", r, took, "got it\n")
}

// notWaiting: a task with its input open that sleeps, or computes, does
// not wait for input.
func (s *suite) notWaiting(t *testing.T) {
	h := s.shared(t, s.common)
	asleep := h.startInput(`echo asleep; sleep 60`, "")
	// The loop runs at the lowest priority (renice): it takes only a core
	// nothing else wants, and a thread runnable is running all the same.
	busy := h.startInput(`renice -n 19 -p $$ >/dev/null; echo busy; while :; do :; done`, "")
	h.readUntil(asleep.ID, func(out, _ string) bool { return out == "asleep\n" })
	h.readUntil(busy.ID, func(out, _ string) bool { return out == "busy\n" })
	for _, id := range []bash.TaskID{asleep.ID, busy.ID} {
		if got := h.get(id); got.WaitingInput {
			t.Errorf("task %s (%s): %+v, want it not waiting for input", id, got.Command, got)
		}
	}
	h.kill(asleep.ID)
	h.kill(busy.ID)
}

// waitingBursts: output in bursts, with gaps shorter and longer than the
// quiet period (but shorter than the settle), all of it the answer.
func (s *suite) waitingBursts(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startInput(`read -r l; for i in 1 2 3; do echo "a$i"; done; sleep 0.01; echo b; sleep 0.1; echo c; read -r m`, "")
	r, took := h.writeWait(task.ID, "go\n")
	h.answered("bursts", r, took, "a1\na2\na3\nb\nc\n")
}

// waitingWork: the program prints, works (running, not reading) for
// longer than the settle, prints again, then reads: the answer waits
// for all of it, where a guess at quiet would have returned after the
// first line.
func (s *suite) waitingWork(t *testing.T) {
	h := s.shared(t, s.common)
	// 300 ms of work: longer than the settle, and at the lowest priority
	// (renice), so that a test that runs through every executor at once
	// takes only CPU nothing else wants: a thread runnable is running all
	// the same.
	task := h.startInput(`read -r l; echo working; renice -n 19 -p $$ >/dev/null; end=$((${EPOCHREALTIME/./} + 300000)); while ((${EPOCHREALTIME/./} < end)); do :; done; echo done; read -r m`, "")
	start := time.Now()
	r, err := h.e.WriteInput(h.ctx(), task.ID, bash.Input{Data: []byte("go\n"), Wait: waitLimit})
	if err != nil {
		t.Fatal(err)
	}
	h.answered("work between the answer's lines", r, time.Since(start), "working\ndone\n")
}

// waitingPolls: a program that polls its input without blocking on it
// (a check, then a sleep) cannot be seen waiting: its answer comes once
// its output settled, and it is not said to wait.
func (s *suite) waitingPolls(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startInput(`while :; do if read -r -t 0; then read -r l; echo "=$l"; fi; sleep 0.02; done`, "")
	r, err := h.e.WriteInput(h.ctx(), task.ID, bash.Input{Data: []byte("x\n"), Wait: waitLimit})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout.Text != "=x\n" || r.Task.WaitingInput {
		t.Errorf("a polling program: stdout %q, task %+v; want %q, not waiting", r.Stdout.Text, r.Task, "=x\n")
	}
	h.kill(task.ID)
}

// waitingEOF: a write that ends the input is answered when the program
// ends, though it is quiet for longer than the settle first (a REPL
// exiting on a loaded machine): it cannot wait for input again.
func (s *suite) waitingEOF(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startInput(`cat >/dev/null; echo got; sleep 0.5; echo bye`, "")
	r, err := h.e.WriteInput(h.ctx(), task.ID, bash.Input{Data: []byte("x\n"), EOF: true, Wait: waitLimit})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout.Text != "got\nbye\n" || !r.Task.Done() || r.Task.ExitCode != 0 {
		t.Errorf("the end of input: stdout %q, task %+v; want %q, ended with exit code 0", r.Stdout.Text, r.Task, "got\nbye\n")
	}
}

// waitingPartLine: part of a line typed into a terminal that reads whole
// lines reaches no read: the program still waits, and the call says so
// at once.
func (s *suite) waitingPartLine(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startTerminal(`read -r l; echo "got $l"; read -r m`)
	h.writeWait(task.ID, "")
	r, took := h.writeWait(task.ID, "ab")
	h.answered("part of a line", r, took, "")
	r, took = h.writeWait(task.ID, "c\n")
	h.answered("the rest of the line", r, took, "got abc\n")
}

// waitingTimed: a program that waits for input with a timeout soon (a
// REPL's event loop with a timer due) is not only waiting for input: it
// prints when the timer ends, and that is the answer too.
func (s *suite) waitingTimed(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startInput(`read -r l; echo "got $l"; read -r -t 0.3 m || echo "timed out"; read -r n`, "")
	r, took := h.writeWait(task.ID, "x\n")
	h.answered("a read with a timeout soon", r, took, "got x\ntimed out\n")
}

// waitingRawOutput: a program in raw mode without echo that prints what
// was typed as its own output keeps it: only a whole line typed, shown
// whole, is taken for a line editor's echo.
func (s *suite) waitingRawOutput(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startTerminal(`stty -icanon -echo; printf 'Continue? [y/n] '; read -r -n1 k; echo "$k"es; read -r -n1 m`)
	h.writeWait(task.ID, "")
	r, took := h.writeWait(task.ID, "y")
	h.answered("a key read in raw mode", r, took, "yes\n")
}
