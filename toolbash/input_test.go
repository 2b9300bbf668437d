//go:build linux

package toolbash

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/tools"
)

// TestInput: a REPL across three calls, a prompt answered, the refusals
// and the task list, as the model reads them (golden).
func TestInput(t *testing.T) {
	r := newRig(t, nil)
	alice, bob := session.Session{ID: "alice"}, session.Session{ID: "bob"}
	got := map[string]string{}
	var names []string
	step := func(name string, s session.Session, tool string, a args) {
		t.Helper()
		res := r.call(t, s, tool, a)
		text := res.Text()
		if res.IsError {
			text = "ERROR: " + text
		}
		names = append(names, name)
		got[name] = text
	}
	step("start-repl", alice, BashName, args{"command": `while IFS= read -r l; do echo "=$l"; done; echo bye`, "description": "d", "input": true})
	step("repl-1", alice, InputName, args{"task_id": "bash-1", "input": "one\n"})
	step("repl-2", alice, InputName, args{"task_id": "bash-1", "input": "two\n"})
	step("repl-3", alice, InputName, args{"task_id": "bash-1", "input": "three\n"})
	step("tasks-while-running", alice, TasksName, args{})
	step("repl-eof", alice, InputName, args{"task_id": "bash-1", "input": "", "eof": true})
	step("after-eof", alice, InputName, args{"task_id": "bash-1", "input": "x\n"})
	step("start-prompt", alice, BashName, args{"command": `printf 'Project name? '; read -r n; echo "created $n"`, "description": "d", "input": true})
	step("prompt-read", alice, InputName, args{"task_id": "bash-2", "input": ""})
	step("prompt-answer", alice, InputName, args{"task_id": "bash-2", "input": "demo\n"})
	step("start-plain", alice, BashName, args{"command": "sleep 30", "description": "d", "run_in_background": true})
	step("no-input", alice, InputName, args{"task_id": "bash-3", "input": "x\n"})
	step("foreign", bob, InputName, args{"task_id": "bash-3", "input": "x\n"})
	step("unknown", alice, InputName, args{"task_id": "bash-9", "input": "x\n"})
	step("too-long", alice, InputName, args{"task_id": "bash-3", "input": strings.Repeat("x", MaxInputBytes+1)})
	step("missing-input", alice, InputName, args{"task_id": "bash-3"})
	step("tasks-of-bob", bob, TasksName, args{})
	step("start-tty", bob, BashName, args{"command": `read -r -p "Continue? [y/N] " a; echo "answered $a"`, "description": "d", "tty": true})
	step("tty-prompt", bob, InputName, args{"task_id": "bash-4", "input": ""})
	step("tty-answer", bob, InputName, args{"task_id": "bash-4", "input": "y\n"})
	ended := make(chan bash.Task, 10)
	defer r.exec.OnTaskDone(func(tk bash.Task) { ended <- tk })()
	step("start-short", alice, BashName, args{"command": "echo done", "description": "d", "input": true})
	for testwait.Recv(t, ended, "the end of bash-5").ID != "bash-5" {
	}
	step("ended", alice, InputName, args{"task_id": "bash-5", "input": "x\n"})
	step("start-raw", alice, BashName, args{"command": "stty raw -echo; echo raw; sleep 30", "description": "d", "tty": true})
	step("raw-read", alice, InputName, args{"task_id": "bash-6", "input": ""})
	step("not-reading", alice, InputName, args{"task_id": "bash-6", "input": strings.Repeat("x", MaxInputBytes), "wait_ms": 300})
	r.call(t, alice, KillName, args{"task_id": "bash-3"})
	r.call(t, alice, KillName, args{"task_id": "bash-6"})
	got["tasks-while-running"] = stripAges(got["tasks-while-running"])
	got["not-reading"] = writtenBytes.ReplaceAllString(got["not-reading"], ": N bytes of it")
	golden(t, "input.txtar", names, got)
}

// writtenBytes is how much of a write a terminal took before it stopped
// reading, which depends on the kernel's buffers.
var writtenBytes = regexp.MustCompile(`: \d+ bytes of it`)

// stripAges replaces the list's ages, which depend on the clock.
func stripAges(s string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if i := strings.Index(line, " started "); i >= 0 {
			if j := strings.Index(line[i:], " ago"); j >= 0 {
				line = line[:i] + " started Ns ago" + line[i+j+len(" ago"):]
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func TestTasksText(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	list := []bash.Task{
		{ID: "bash-1", Command: "python3 -q", Status: bash.StatusRunning, Input: true, Started: now.Add(-45 * time.Second)},
		{ID: "bash-2", Command: "npm run dev\n", Status: bash.StatusRunning, Started: now.Add(-12 * time.Minute)},
		{ID: "bash-3", Command: "make\nmake test", Status: bash.StatusCompleted, ExitCode: 2, Input: true, Started: now.Add(-3 * time.Hour)},
		{ID: "bash-4", Command: "sleep 1", Status: bash.StatusKilled, Signal: "SIGTERM"},
		{ID: "bash-5", Command: "git add -p", Status: bash.StatusRunning, Input: true, Terminal: true, Started: now.Add(-5 * time.Second)},
		{ID: "bash-6", Command: "npm init", Status: bash.StatusRunning, Input: true, WaitingInput: true, Started: now.Add(-2 * time.Second)},
	}
	want := "bash-1 [status: running] started 45s ago, input open: python3 -q\n" +
		"bash-2 [status: running] started 12m ago: npm run dev\n" +
		"bash-3 [status: completed, exit code: 2] started 3h ago: make …\n" +
		"bash-4 [status: killed by SIGTERM]: sleep 1\n" +
		"bash-5 [status: running] started 5s ago, in a terminal: git add -p\n" +
		"bash-6 [status: running, waiting for input] started 2s ago, input open: npm init"
	if got := tasksText(list, now); got != want {
		t.Errorf("tasksText:\n%s\nwant\n%s", got, want)
	}
	if got := tasksText(nil, now); got != "(no background tasks)" {
		t.Errorf("no tasks: %q", got)
	}
}

// inputRecorder is a local executor that records the Input of each write.
type inputRecorder struct {
	*local.Executor
	waits []time.Duration
}

func (r *inputRecorder) WriteInput(ctx context.Context, id bash.TaskID, in bash.Input) (bash.TaskRead, error) {
	r.waits = append(r.waits, in.Wait)
	return r.Executor.WriteInput(ctx, id, in)
}

// TestInputWait: a start with input waits for its first prompt; wait_ms is passed on in milliseconds, capped at 30 s
// (a model's wait_ms of a day must not hold the call), and left to the
// executor's default where it is not given.
func TestInputWait(t *testing.T) {
	le := newLocal(t)
	rec := &inputRecorder{Executor: le}
	tb := New(rec, nil)
	t.Cleanup(tb.Close)
	var reg tools.Registry
	if err := tb.Register(&reg); err != nil {
		t.Fatal(err)
	}
	s := session.Session{ID: "s", Cwd: t.TempDir()}
	call := func(tool string, a args) string {
		b, _ := json.Marshal(a)
		return execute(t, &reg, &tools.Call{Tool: tool, Args: b, Session: s}).Text()
	}
	call(BashName, args{"command": "cat", "description": "d", "input": true})
	defer call(KillName, args{"task_id": "bash-1"})
	for _, ms := range []any{1500, 86400000, nil} {
		a := args{"task_id": "bash-1", "input": "x\n"}
		if ms != nil {
			a["wait_ms"] = ms
		}
		if got := call(InputName, a); !strings.HasPrefix(got, "x\n") {
			t.Fatalf("wait_ms %v: %q", ms, got)
		}
	}
	// The start waits for the first prompt (StartWait, by default
	// bash.DefaultInputWait), then each call passes its own.
	if want := []time.Duration{bash.DefaultInputWait, 1500 * time.Millisecond, 30 * time.Second, 0}; !slices.Equal(rec.waits, want) {
		t.Errorf("waits passed on: %v, want %v", rec.waits, want)
	}
}

// TestWaitingNotice: a task that starts waiting for input after its start
// returned is announced to its owner, once (golden); a read that shows
// it waiting before the notice is taken makes the notice moot.
func TestWaitingNotice(t *testing.T) {
	noticed := make(chan string, 10)
	tb := New(newLocal(t), &Options{StartWait: -1, Notify: func(_, text string) { noticed <- text }})
	t.Cleanup(tb.Close)
	var reg tools.Registry
	if err := tb.Register(&reg); err != nil {
		t.Fatal(err)
	}
	s := session.Session{ID: "s", Cwd: t.TempDir()}
	call := func(tool string, a args) string {
		b, _ := json.Marshal(a)
		return execute(t, &reg, &tools.Call{Tool: tool, Args: b, Session: s}).Text()
	}
	got := map[string]string{}
	names := []string{"start", "notice", "taken", "answer", "read-first", "taken-after-read"}
	got["start"] = call(BashName, args{"command": `sleep 0.2; printf 'Proceed? [y/N] '; read -r a; echo "ok $a"; sleep 1; printf 'Sure? '; read -r b`, "description": "d", "input": true})
	got["notice"] = testwait.Recv(t, noticed, "the notice of the first prompt")
	got["taken"] = strings.Join(taskLines(&tb.notices, "s"), "\n")
	got["answer"] = call(InputName, args{"task_id": "bash-1", "input": "y\n"})
	testwait.Recv(t, noticed, "the notice of the second prompt")
	got["read-first"] = call(OutputName, args{"task_id": "bash-1"})
	got["taken-after-read"] = strings.Join(taskLines(&tb.notices, "s"), "\n")
	call(KillName, args{"task_id": "bash-1"})
	golden(t, "waiting.txtar", names, got)
}

// TestWaitingNoticeOrder: the news that a task waited can come after its
// end (over a connection, the two travel apart): it is dropped then. A
// read of the end drops a waiting notice and keeps the end's from being
// queued.
func TestWaitingNoticeOrder(t *testing.T) {
	var box noticeBox
	running := bash.Task{ID: "bash-1", Owner: "a", Status: bash.StatusRunning, WaitingInput: true}
	ended := running
	ended.Status, ended.WaitingInput = bash.StatusCompleted, false
	box.add(ended)
	if _, ok := box.addWaiting(running); ok {
		t.Error("a waiting notice after the end was queued")
	}
	if got := taskLines(&box, "a"); len(got) != 1 || !strings.Contains(got[0], "finished") {
		t.Errorf("notices %q, want the end's alone", got)
	}
	two := bash.Task{ID: "bash-2", Owner: "a", Status: bash.StatusRunning}
	box.addWaiting(two)
	box.seenEnd("a", two.ID)
	two.Status = bash.StatusCompleted
	if _, ok := box.add(two); ok {
		t.Error("the end's notice was queued after its end was read")
	}
	if got := taskLines(&box, "a"); len(got) != 0 {
		t.Errorf("notices %q, want none", got)
	}
}

// taskLines takes every notice waiting for owner, and returns its task
// notices, one per line, without their heading.
func taskLines(b *noticeBox, owner string) []string {
	for _, text := range b.take(owner, -1) {
		if lines, ok := strings.CutPrefix(text, taskNoticesHeading+"\n"); ok {
			return strings.Split(lines, "\n")
		}
	}
	return nil
}
