//go:build linux

package bashtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) runTests(t *testing.T) {
	parallel(t, "exit code is a result", s.exitCodes)
	parallel(t, "stdout and stderr apart", s.streamsApart)
	parallel(t, "a long command runs whole", s.longCommand)
	parallel(t, "death by signal is a result", s.signalDeaths)
	parallel(t, "timeout is a result, SIGTERM", s.timeout)
	parallel(t, "timeout with TERM trapped and exit 0 is still TimedOut", s.timeoutTrapped)
	parallel(t, "timeout with TERM ignored ends in SIGKILL after the grace", s.timeoutIgnored)
	parallel(t, "cancelled context aborts and keeps the output", s.abort)
	parallel(t, "context already done starts nothing", s.ctxDone)
	parallel(t, "unusable workdir is a WorkdirError", s.badWorkdir)
	parallel(t, "leftovers are adopted as a task of the owner", s.adopted)
	parallel(t, "adopted leftovers are killable", s.adoptedKill)
	parallel(t, "leftovers killed at the owner's task limit", s.leftoversKilled)
}

// checkResult checks the fields of a result every test looks at.
func checkResult(t *testing.T, cmd string, res bash.RunResult, code int, signal string, timedOut bool) {
	t.Helper()
	if res.ExitCode != code || res.Signal != signal || res.TimedOut != timedOut || res.Aborted ||
		res.Adopted != "" || res.LeftoversKilled {
		t.Errorf("%q: got %+v; want exit code %d, signal %q, TimedOut %v, and no abort or leftovers",
			cmd, res, code, signal, timedOut)
	}
}

func (s *suite) exitCodes(t *testing.T) {
	h := s.shared(t, s.common)
	for _, tc := range []struct {
		cmd  string
		code int
	}{{"true", 0}, {"false", 1}, {"exit 3", 3}, {"exit 255", 255}, {"echo x >&2; exit 42", 42}} {
		res := h.runCmd(tc.cmd)
		checkResult(t, tc.cmd, res, tc.code, "", false)
		if res.Timeout != h.cfg.Timeout {
			t.Errorf("%q: Timeout %v; want %v, the one that applied", tc.cmd, res.Timeout, h.cfg.Timeout)
		}
	}
}

func (s *suite) streamsApart(t *testing.T) {
	h := s.shared(t, s.common)
	for _, tc := range []struct{ cmd, stdout, stderr string }{
		{"true", "", ""},
		{"echo out; echo err >&2; printf 'no newline'", "out\nno newline", "err\n"},
		{"echo only err >&2", "", "only err\n"},
		{"printf 'caf\\xc3\\xa9\\n'; printf '\\xe2\\x82\\xac\\n' >&2", "café\n", "€\n"},
	} {
		res := h.runCmd(tc.cmd)
		checkResult(t, tc.cmd, res, 0, "", false)
		want := bash.RunResult{Stdout: bash.Output{Text: tc.stdout, Bytes: int64(len(tc.stdout))},
			Stderr: bash.Output{Text: tc.stderr, Bytes: int64(len(tc.stderr))}}
		if res.Stdout != want.Stdout || res.Stderr != want.Stderr {
			t.Errorf("%q: stdout %+v, stderr %+v; want %+v, %+v", tc.cmd, res.Stdout, res.Stderr, want.Stdout, want.Stderr)
		}
	}
}

// longCommand: a command longer than one argv string may be (Linux refuses
// 128 KiB) runs whole, as `bash -c` would run it.
func (s *suite) longCommand(t *testing.T) {
	h := s.shared(t, s.common)
	long := strings.Repeat("é", 150<<10)
	cmd := "x='" + long + "'\necho ${#x}; exit 4\n"
	res := h.runCmd(cmd)
	checkResult(t, "a 300 KB command", res, 4, "", false)
	if want := fmt.Sprintln(len(long)); res.Stdout.Text != want && res.Stdout.Text != fmt.Sprintln(150<<10) {
		t.Errorf("stdout %q, stderr %q; want the length of x", res.Stdout.Text, res.Stderr.Text)
	}
}

func (s *suite) signalDeaths(t *testing.T) {
	h := s.shared(t, s.common)
	for _, tc := range []struct{ cmd, signal string }{
		{"kill -TERM $$", "SIGTERM"},
		{"kill -KILL $$", "SIGKILL"},
		{"echo bye; kill -HUP $$", "SIGHUP"},
	} {
		checkResult(t, tc.cmd, h.runCmd(tc.cmd), -1, tc.signal, false)
	}
}

func (s *suite) timeout(t *testing.T) {
	h := s.shared(t, s.common)
	cmd := "echo start; env " + h.tag("sleep") + " sleep 30"
	res := h.run(bash.ExecRequest{Command: cmd, Timeout: time.Second})
	checkResult(t, cmd, res, -1, "SIGTERM", true)
	if res.Timeout != time.Second || res.Stdout.Text != "start\n" {
		t.Errorf("Timeout %v, stdout %q; want 1s, %q", res.Timeout, res.Stdout.Text, "start\n")
	}
	h.assertGone("after a timeout", h.tag("sleep"))
}

func (s *suite) timeoutTrapped(t *testing.T) {
	h := s.shared(t, s.common)
	cmd := "trap 'echo bye; exit 0' TERM; echo ready; sleep 30 & wait"
	res := h.run(bash.ExecRequest{Command: cmd, Timeout: time.Second})
	checkResult(t, cmd, res, 0, "", true)
	if res.Stdout.Text != "ready\nbye\n" {
		t.Errorf("stdout %q; want %q", res.Stdout.Text, "ready\nbye\n")
	}
}

func (s *suite) timeoutIgnored(t *testing.T) {
	h := s.shared(t, s.common)
	cmd := "trap '' TERM; env " + h.tag("sleep") + " sleep 30"
	res := h.run(bash.ExecRequest{Command: cmd, Timeout: time.Second})
	checkResult(t, cmd, res, -1, "SIGKILL", true)
	h.assertGone("after a timeout", h.tag("sleep"))
}

// runAsync runs spec in the background of the test; the channel gets the
// outcome.
func (h *harness) runAsync(ctx context.Context, spec bash.ExecSpec) <-chan runOutcome {
	got := make(chan runOutcome, 1)
	go func() {
		res, err := h.e.Run(ctx, spec)
		got <- runOutcome{res, err}
	}()
	return got
}

type runOutcome struct {
	res bash.RunResult
	err error
}

// outcome waits for a Run started with runAsync.
func (h *harness) outcome(got <-chan runOutcome) runOutcome {
	h.t.Helper()
	select {
	case o := <-got:
		return o
	case <-time.After(waitLimit):
		h.t.Fatal("Run never returned")
		return runOutcome{}
	}
}

func (s *suite) abort(t *testing.T) {
	h := s.shared(t, s.common)
	sync := h.fifo("sync")
	cmd := "echo started; echo err >&2; echo > " + quote(sync) + "; env " + h.tag("sleep") + " sleep 30"
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	got := h.runAsync(ctx, h.resolve(bash.ExecRequest{Command: cmd}))
	h.reached(sync)
	cancel()
	o := h.outcome(got)
	if !errors.Is(o.err, bash.ErrAborted) {
		t.Errorf("Run after cancel: error %v; want one wrapping bash.ErrAborted", o.err)
	}
	r := o.res
	if !r.Aborted || r.TimedOut || r.Signal != "SIGTERM" || r.Stdout.Text != "started\n" || r.Stderr.Text != "err\n" {
		t.Errorf("result %+v; want Aborted, SIGTERM, and what was printed", r)
	}
	h.assertGone("after an abort", h.tag("sleep"))
}

func (s *suite) ctxDone(t *testing.T) {
	h := s.harness(t, nil)
	ran := filepath.Join(h.cfg.Cwd, "ran")
	spec := h.resolve(bash.ExecRequest{Command: "touch " + quote(ran)})
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := h.e.Run(ctx, spec)
	if err == nil || !(errors.Is(err, bash.ErrAborted) || errors.Is(err, context.Canceled)) {
		t.Errorf("Run with a done context: %v; want an error wrapping bash.ErrAborted or the context's", err)
	}
	h.close()
	if _, err := os.Stat(ran); err == nil {
		t.Error("Run started the command of a context that was already done")
	}
}

func (s *suite) badWorkdir(t *testing.T) {
	h := s.harness(t, nil)
	file := filepath.Join(h.cfg.Cwd, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(h.cfg.Cwd, "ran")
	for _, tc := range []struct {
		dir  string
		want error
	}{
		{filepath.Join(h.cfg.Cwd, "missing"), fs.ErrNotExist},
		{"missing/deeper", fs.ErrNotExist},
		{file, bash.ErrNotDirectory},
	} {
		spec := h.resolve(bash.ExecRequest{Command: "touch " + quote(ran), Workdir: tc.dir})
		_, err := h.e.Run(h.ctx(), spec)
		var we *bash.WorkdirError
		if !errors.As(err, &we) || we.Path != spec.Workdir || !errors.Is(err, tc.want) {
			t.Errorf("Run in %s: %v (%T); want a *bash.WorkdirError for %s matching %v", tc.dir, err, err, spec.Workdir, tc.want)
		}
	}
	h.close()
	if _, err := os.Stat(ran); err == nil {
		t.Error("a command ran although its workdir was unusable")
	}
}

// adopted: `... & echo x` returns at once with what the shell printed and
// an adopted task of the spec's owner, whose reads go on from there.
func (s *suite) adopted(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	gate := h.fifo("gate")
	cmd := "(read < " + quote(gate) + "; echo later; echo err2 >&2) & echo x; echo err1 >&2; exit 3"
	begin := time.Now()
	res := h.run(bash.ExecRequest{Command: cmd, Owner: "alice"})
	h.atOnce("Run of a command that leaves a process running", begin)
	if res.Adopted == "" || res.ExitCode != 3 || res.Signal != "" || res.TimedOut || res.LeftoversKilled {
		t.Fatalf("result %+v; want exit code 3 and an adopted task", res)
	}
	id := res.Adopted
	if owner, err := h.e.OwnerOf(h.ctx(), id); err != nil || owner != "alice" {
		t.Errorf("OwnerOf(%s) = %q, %v; want alice", id, owner, err)
	}
	if task := h.get(id); task.Status != bash.StatusRunning || task.Owner != "alice" {
		t.Errorf("Get(%s) = %+v; want a running task of alice", id, task)
	}
	h.release(gate)
	if end := h.wait(l, id); end.Status != bash.StatusCompleted || end.ExitCode != 3 {
		t.Errorf("listener heard %+v; want completed with the shell's exit code 3", end)
	}
	// What the shell printed is in the result, unless it was still in the
	// pipe when the run returned: then the task's read has it, once.
	r := h.read(id)
	stdout, stderr := res.Stdout.Text+r.Stdout.Text, res.Stderr.Text+r.Stderr.Text
	if stdout != "x\nlater\n" || stderr != "err1\nerr2\n" || !r.Task.Done() || r.Lossy() {
		t.Errorf("result then read after the end: stdout %q, stderr %q (%+v); want each byte once", stdout, stderr, r)
	}
}

// adoptedKill: leftovers are adopted whether or not they hold the output
// pipes, and Kill stops them.
func (s *suite) adoptedKill(t *testing.T) {
	for _, redirect := range []string{"", " > /dev/null 2>&1"} {
		h := s.shared(t, s.common)
		cmd := "env " + h.tag("left") + " sleep 30" + redirect + " & echo x"
		res := h.run(bash.ExecRequest{Command: cmd, Owner: "bob"})
		if res.Adopted == "" {
			t.Fatalf("%q: result %+v; want an adopted task", cmd, res)
		}
		h.waitLive(h.tag("left"))
		h.kill(res.Adopted)
		h.assertGone("after Kill of the adopted task", h.tag("left"))
		if task := h.get(res.Adopted); task.Status != bash.StatusKilled || task.Owner != "bob" {
			t.Errorf("%q: after Kill: %+v; want a killed task of bob", cmd, task)
		}
	}
}

func (s *suite) leftoversKilled(t *testing.T) {
	h := s.harness(t, func(c *Config) { c.MaxTasksPerOwner = 1 })
	h.start("sleep 30", "alice")
	cmd := "env " + h.tag("left") + " sleep 30 & echo x"
	begin := time.Now()
	res := h.run(bash.ExecRequest{Command: cmd, Owner: "alice"})
	h.atOnce("Run of a command that leaves a process running", begin)
	if !res.LeftoversKilled || res.Adopted != "" || res.ExitCode != 0 || res.Stdout.Text != "x\n" {
		t.Errorf("result %+v; want exit code 0, stdout x, and LeftoversKilled", res)
	}
	h.assertGone("after Run reported its leftovers killed", h.tag("left"))
}
