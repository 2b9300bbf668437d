//go:build linux

package bashtest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) inputTests(t *testing.T) {
	parallel(t, "a prompt answered", s.inputPrompt)
	parallel(t, "a REPL across three writes, then EOF", s.inputREPL)
	parallel(t, "EOF after data", s.inputEOF)
	parallel(t, "refused: no input, ended, closed, unknown", s.inputRefused)
	parallel(t, "a command that does not read: the write gives up", s.inputBlocked)
	parallel(t, "a flood of output while waiting: bounded by Wait", s.inputFlood)
	parallel(t, "Run refuses Input", s.inputRun)
}

// startInput starts cmd in the background with its input open.
func (h *harness) startInput(cmd, owner string) bash.Task {
	h.t.Helper()
	spec := h.resolve(bash.ExecRequest{Command: cmd, Owner: owner})
	spec.Input = true
	task, err := h.e.Start(h.ctx(), spec)
	if err != nil {
		h.t.Fatalf("Start(%q) with input: %v", cmd, err)
	}
	if !task.Input {
		h.t.Errorf("Start(%q) with input: the task says it takes none: %+v", cmd, task)
	}
	return task
}

// write writes data (and EOF) to the task's input, failing the test on an
// error, and returns the read that came back.
func (h *harness) write(id bash.TaskID, data string, eof bool) bash.TaskRead {
	h.t.Helper()
	r, err := h.e.WriteInput(h.ctx(), id, bash.Input{Data: []byte(data), EOF: eof, Wait: 5 * time.Second})
	if err != nil {
		h.t.Fatalf("WriteInput(%s, %q): %v", id, data, err)
	}
	return r
}

func (s *suite) inputPrompt(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	task := h.startInput(`printf 'name? '; read -r n; echo "hello $n"`, "alice")
	h.readUntil(task.ID, func(out, _ string) bool { return out == "name? " })
	r := h.write(task.ID, "bob\n", false)
	if r.Stdout.Text != "hello bob\n" {
		t.Errorf("the answer to the prompt: stdout %q, want %q", r.Stdout.Text, "hello bob\n")
	}
	if got := h.wait(l, task.ID); got.Status != bash.StatusCompleted || got.ExitCode != 0 {
		t.Errorf("after the answer: %+v, want completed", got)
	}
}

func (s *suite) inputREPL(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	task := h.startInput(`while IFS= read -r l; do echo "=$l"; done; echo bye`, "")
	for _, line := range []string{"one", "two", "three"} {
		r := h.write(task.ID, line+"\n", false)
		if r.Stdout.Text != "="+line+"\n" || r.Task.Done() {
			t.Errorf("write %q: stdout %q, task %+v; want %q from a running task", line, r.Stdout.Text, r.Task, "="+line+"\n")
		}
	}
	r := h.write(task.ID, "", true)
	if r.Stdout.Text != "bye\n" {
		t.Errorf("EOF: stdout %q, want %q", r.Stdout.Text, "bye\n")
	}
	h.wait(l, task.ID)
}

func (s *suite) inputEOF(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startInput(`cat; echo " end"`, "")
	r := h.write(task.ID, "partial", true)
	out := r.Stdout.Text
	if !r.Task.Done() {
		rest, _ := h.readUntil(task.ID, func(o, _ string) bool { return strings.HasSuffix(out+o, " end\n") })
		out += rest
	}
	if out != "partial end\n" {
		t.Errorf("cat, then EOF: stdout %q, want %q", out, "partial end\n")
	}
}

// inputErr checks that WriteInput fails with an *InputError of reason.
func (h *harness) inputErr(what string, id bash.TaskID, reason error) {
	h.t.Helper()
	_, err := h.e.WriteInput(h.ctx(), id, bash.Input{Data: []byte("x\n")})
	var ie *bash.InputError
	if !errors.As(err, &ie) || !errors.Is(err, reason) || ie.ID != id {
		h.t.Errorf("%s: WriteInput = %v; want an *InputError for %s: %v", what, err, id, reason)
	}
}

func (s *suite) inputRefused(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	plain := h.start("sleep 30", "")
	h.inputErr("a task started without input", plain.ID, bash.ErrNoInput)
	h.kill(plain.ID)
	ended := h.startInput("exit 3", "")
	h.wait(l, ended.ID)
	h.inputErr("an ended task", ended.ID, bash.ErrTaskEnded)
	closed := h.startInput("sleep 30", "")
	if _, err := h.e.WriteInput(h.ctx(), closed.ID, bash.Input{EOF: true, Wait: 100 * time.Millisecond}); err != nil {
		t.Fatalf("EOF: %v", err) // the wait is short: sleep prints nothing
	}
	h.inputErr("input closed by EOF", closed.ID, bash.ErrInputClosed)
	h.kill(closed.ID)
	if _, err := h.e.WriteInput(h.ctx(), "bash-999999", bash.Input{Data: []byte("x")}); !errors.Is(err, bash.ErrUnknownTask) {
		t.Errorf("an unknown task: WriteInput = %v, want ErrUnknownTask", err)
	}
}

func (s *suite) inputBlocked(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startInput("sleep 30", "")
	big := make([]byte, 128<<10) // past a pipe's buffer (64 KiB by default)
	start := time.Now()
	_, err := h.e.WriteInput(h.ctx(), task.ID, bash.Input{Data: big, Wait: 300 * time.Millisecond})
	var ie *bash.InputError
	if !errors.As(err, &ie) || !errors.Is(err, bash.ErrInputBlocked) || ie.Written >= len(big) {
		t.Errorf("128 KiB to a command that does not read: %v; want ErrInputBlocked with part written", err)
	}
	if d := time.Since(start); d > waitLimit {
		t.Errorf("the write gave up after %v, want about its Wait (300ms)", d)
	}
	h.kill(task.ID)
}

func (s *suite) inputFlood(t *testing.T) {
	h := s.shared(t, s.common)
	// Output that keeps coming (every 20 ms, less than the settle apart)
	// never lets the output settle: the wait ends the call.
	task := h.startInput(`read -r l; while :; do echo flood; sleep 0.02; done`, "")
	start := time.Now()
	r, err := h.e.WriteInput(h.ctx(), task.ID, bash.Input{Data: []byte("go\n"), Wait: 500 * time.Millisecond})
	if err != nil || !strings.HasPrefix(r.Stdout.Text, "flood\n") && !r.Stdout.Truncated {
		t.Errorf("WriteInput to a flooding task: %v, stdout starts %.20q", err, r.Stdout.Text)
	}
	if d := time.Since(start); d > waitLimit {
		t.Errorf("WriteInput returned after %v while the task kept printing; want about its Wait (500ms)", d)
	}
	h.kill(task.ID)
}

func (s *suite) inputRun(t *testing.T) {
	h := s.shared(t, s.common)
	for _, term := range []*bash.TermSize{nil, {}} {
		// cat would wait for input until the timeout: a refusal comes at
		// once, as an error of its own, not as a run timed out or aborted.
		spec := h.resolve(bash.ExecRequest{Command: "cat", Timeout: time.Second})
		spec.Input, spec.Terminal = true, term
		if r, err := h.e.Run(h.ctx(), spec); err == nil || errors.Is(err, bash.ErrAborted) {
			t.Errorf("Run with Input (terminal %v): %+v, %v; want it refused", term != nil, r, err)
		}
	}
}

// startTerminal starts cmd in the background in a terminal of the
// default size.
func (h *harness) startTerminal(cmd string) bash.Task {
	h.t.Helper()
	return h.startTerminalSized(cmd, bash.TermSize{})
}

// startTerminalSized starts cmd in the background in a terminal of size.
func (h *harness) startTerminalSized(cmd string, size bash.TermSize) bash.Task {
	h.t.Helper()
	spec := h.resolve(bash.ExecRequest{Command: cmd})
	spec.Terminal = &size
	task, err := h.e.Start(h.ctx(), spec)
	if err != nil {
		h.t.Fatalf("Start(%q) in a terminal: %v", cmd, err)
	}
	if !task.Terminal || !task.Input {
		h.t.Errorf("Start(%q) in a terminal: the task says %+v", cmd, task)
	}
	return task
}

func (s *suite) terminalTests(t *testing.T) {
	parallel(t, "a terminal: its size, text without control sequences, a prompt", s.terminalText)
	parallel(t, "Ctrl-C to a running program", s.terminalCtrlC)
	parallel(t, "EOF types Ctrl-D", s.terminalEOF)
	parallel(t, "a terminal not read: the write gives up, Kill works", s.terminalBlocked)
	parallel(t, "the command holds no controlling side of a terminal", s.terminalNoMaster)
	parallel(t, "a terminal of a given size; a size out of range is the default", s.terminalSize)
	parallel(t, "a terminal's spill file holds its raw bytes", s.terminalSpill)
}

// terminalSpill: the text is stripped of the terminal's sequences, the
// spill file keeps every byte the terminal printed.
func (s *suite) terminalSpill(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	spec := h.resolve(bash.ExecRequest{Command: `printf '\033[1;31mred\033[0m\n'; seq 100`})
	spec.Terminal, spec.SpillAfter = &bash.TermSize{}, 10
	task, err := h.e.Start(h.ctx(), spec)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(l, task.ID)
	r := h.read(task.ID)
	if want := "red\n" + lines(1, 100); r.Stdout.Text != want {
		t.Errorf("a terminal's text: %q, want %q", r.Stdout.Text, want)
	}
	raw := "\033[1;31mred\033[0m\r\n" + strings.ReplaceAll(lines(1, 100), "\n", "\r\n") // the terminal ends lines with \r\n
	h.checkSpill("a terminal's output", r.Stdout.SpillPath, raw)
}

func (s *suite) terminalSize(t *testing.T) {
	h := s.shared(t, s.common)
	for _, c := range []struct {
		size bash.TermSize
		want string
	}{
		{bash.TermSize{Rows: 40, Cols: 132}, "40 132"},
		{bash.TermSize{Rows: 65536, Cols: 132}, "24 80"},
		{bash.TermSize{Rows: 40, Cols: -1}, "24 80"},
	} {
		task := h.startTerminalSized("stty size", c.size)
		if out, _ := h.readUntil(task.ID, func(out, _ string) bool { return strings.Contains(out, "\n") }); out != c.want+"\n" {
			t.Errorf("a terminal of %+v: stty size says %q, want %q", c.size, out, c.want)
		}
	}
}

// terminalNoMaster: the command has its terminal's own side only; a
// descriptor of the controlling side (ptmx) would let it read and type
// into its own terminal, or, in a sandbox, hold the server's.
func (s *suite) terminalNoMaster(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startTerminal(`for f in /proc/$$/fd/*; do readlink "$f"; done; echo listed`)
	out, _ := h.readUntil(task.ID, func(out, _ string) bool { return strings.Contains(out, "listed") })
	if strings.Contains(out, "ptmx") || !strings.Contains(out, "/dev/") {
		t.Errorf("the command's descriptors:\n%s\nwant its terminal's side only", out)
	}
}

// terminalBlocked: a program that puts its terminal in raw mode and
// reads nothing fills the terminal's buffer; the write must give up at
// its wait (not block, holding the task's input), and Kill must end the
// task.
func (s *suite) terminalBlocked(t *testing.T) {
	h := s.shared(t, s.common)
	task := h.startTerminal(`stty raw -echo; echo raw; sleep 30`)
	h.readUntil(task.ID, func(out, _ string) bool { return strings.Contains(out, "raw") })
	_, err := h.e.WriteInput(h.ctx(), task.ID, bash.Input{Data: make([]byte, 64<<10), Wait: 300 * time.Millisecond})
	if !errors.Is(err, bash.ErrInputBlocked) {
		t.Errorf("64 KiB to a terminal nobody reads: %v, want ErrInputBlocked", err)
	}
	h.kill(task.ID)
}

func (s *suite) terminalText(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	task := h.startTerminal(`test -t 0 && test -t 1 && test -t 2 && echo terminal; stty size; printf '\033[1;31mred\033[0m\n'; printf 'got 10%%\rgot 100%%\n'; read -r -p "name? " n; echo "hello $n"`)
	// The first read ends when the shell waits for input, not when the
	// output pauses (a busy machine pauses it between two commands).
	r, err := h.e.WriteInput(h.ctx(), task.ID, bash.Input{Wait: 5 * time.Second, Settle: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if want := "terminal\n24 80\nred\ngot 100%\nname? "; r.Stdout.Text != want {
		t.Errorf("the terminal's first output: %q, want %q", r.Stdout.Text, want)
	}
	out := h.write(task.ID, "bob\n", false).Stdout.Text
	h.wait(l, task.ID)
	out += h.read(task.ID).Stdout.Text
	if want := "hello bob\n"; out != want { // the terminal's echo of what was typed is left out
		t.Errorf("after the answer: %q, want %q", out, want)
	}
}

func (s *suite) terminalCtrlC(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	task := h.startTerminal(`echo ready; sleep 30`)
	h.readUntil(task.ID, func(out, _ string) bool { return out == "ready\n" })
	h.write(task.ID, "\x03", false)
	if got := h.wait(l, task.ID); got.Signal != "SIGINT" && got.ExitCode != 130 {
		t.Errorf("after Ctrl-C: %+v, want the command ended by SIGINT", got)
	}
}

func (s *suite) terminalEOF(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	task := h.startTerminal(`cat >/dev/null; echo "cat ended"`)
	out := h.write(task.ID, "some text\n", true).Stdout.Text
	h.wait(l, task.ID)
	out += h.read(task.ID).Stdout.Text
	if !strings.HasSuffix(out, "cat ended\n") {
		t.Errorf("EOF in a terminal: %q, want cat to end", out)
	}
	h.inputErr("a terminal whose task ended", task.ID, bash.ErrTaskEnded)
}
