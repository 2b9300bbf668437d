//go:build linux

package toolbash

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/tools"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a registry with the five tools over a real local executor.
type rig struct {
	exec *local.Executor
	reg  *tools.Registry
	tb   *Tools

	mu      sync.Mutex
	notices map[string][]string
	noticed chan struct{}
}

// newLocal is a local executor with a spill directory of the test's,
// closed when the test ends.
func newLocal(t *testing.T) *local.Executor {
	t.Helper()
	e, err := local.New(&local.Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func newRig(t *testing.T, o *local.Options) *rig {
	t.Helper()
	if o == nil {
		o = &local.Options{}
	}
	o.SpillDir = t.TempDir()
	if o.Grace == 0 {
		o.Grace = 300 * time.Millisecond
	}
	e, err := local.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{exec: e, reg: &tools.Registry{}, notices: map[string][]string{}, noticed: make(chan struct{}, 100)}
	r.tb = New(e, &Options{Notify: func(id, text string) {
		r.mu.Lock()
		r.notices[id] = append(r.notices[id], text)
		r.mu.Unlock()
		r.noticed <- struct{}{}
	}})
	if err := r.tb.Register(r.reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.tb.Close()
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

func (r *rig) call(t *testing.T, s session.Session, tool string, args any) *tools.Result {
	t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, _ := json.Marshal(args)
		raw = string(b)
	}
	return execute(t, r.reg, &tools.Call{Tool: tool, Args: json.RawMessage(raw), Session: s})
}

// execute runs a call through reg; the test fails if it gets no result
// within testwait.Limit.
func execute(t *testing.T, reg *tools.Registry, c *tools.Call) *tools.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	res := reg.Execute(ctx, c)
	if ctx.Err() != nil {
		t.Fatalf("no result of %s %s within %v (aborted then, it returned %q)", c.Tool, c.Args, testwait.Limit, res.Text())
	}
	return res
}

// endSession ends a session, and its tasks, within testwait.Limit.
func (r *rig) endSession(t *testing.T, id string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.tb.EndSession(context.Background(), id)
	}()
	testwait.Recv(t, done, "end of session "+strconv.Quote(id))
}

func (r *rig) noticesOf(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notices[id]...)
}

type args = map[string]any

func TestBashEndToEnd(t *testing.T) {
	r := newRig(t, &local.Options{MaxOutputBytes: 100})
	dir := t.TempDir()
	s := session.Session{ID: "s1", Cwd: dir}
	tests := []struct {
		name, cmd string
		timeout   float64
		want      string
	}{
		{"stdout", "echo hello", 0, "hello\n"},
		{"no output", "true", 0, "(no output)"},
		{"stderr only", "echo oops >&2", 0, "[stderr]\noops\n"},
		{"no newline then stderr", "printf out; echo err >&2", 0, "out\n[stderr]\nerr\n"},
		{"exit code", "echo x; exit 3", 0, "x\n[exit code: 3]"},
		{"timeout", "echo start; sleep 30", 200, "start\n[timed out after 200ms]\n[killed by signal: SIGTERM]"},
		{"trapped timeout, exit 0", "trap 'echo bye; exit 0' TERM; sleep 30 & wait", 1000, "bye\n[timed out after 1000ms]"},
		{"signal", "kill -KILL $$", 0, "(no output)\n[killed by signal: SIGKILL]"},
		{"session cwd", "pwd", 0, dir + "\n"},
		{"fractional timeout", "sleep 30", 150.2, "(no output)\n[timed out after 151ms]\n[killed by signal: SIGTERM]"},
		{"sub-millisecond timeout", "sleep 30", 0.001, "(no output)\n[timed out after 1ms]\n[killed by signal: SIGTERM]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := args{"command": tc.cmd, "description": "Run a test command"}
			if tc.timeout > 0 {
				a["timeoutMs"] = tc.timeout
			}
			res := r.call(t, s, BashName, a)
			if res.IsError || res.Text() != tc.want {
				t.Errorf("got %q (isError %v); want %q", res.Text(), res.IsError, tc.want)
			}
		})
	}
	t.Run("truncated", func(t *testing.T) {
		res := r.call(t, s, BashName, args{"command": "seq 100", "description": "d"})
		text := res.Text()
		var seq strings.Builder
		for i := 1; i <= 100; i++ {
			fmt.Fprintln(&seq, i)
		}
		tail := seq.String()[seq.Len()-100:]
		prefix := tail[strings.IndexByte(tail, '\n')+1:] + "[output truncated; full output: "
		if !strings.HasPrefix(text, prefix) || !strings.HasSuffix(text, ".log]") {
			t.Fatalf("got %q", text)
		}
		path := strings.TrimSuffix(strings.TrimPrefix(text, prefix), "]")
		if b, err := os.ReadFile(path); err != nil || string(b) != seq.String() {
			t.Errorf("spill %s: %v", path, err)
		}
	})
	t.Run("adopted leftovers", func(t *testing.T) {
		res := r.call(t, s, BashName, args{"command": "sleep 30 & echo started", "description": "d"})
		if res.Text() != "started\n[still running in background as task bash-1]" {
			t.Fatalf("got %q", res.Text())
		}
		if k := r.call(t, s, KillName, args{"task_id": "bash-1"}); k.Text() != "killed background task bash-1" {
			t.Errorf("kill: %q", k.Text())
		}
	})
}

func TestBadInput(t *testing.T) {
	r := newRig(t, nil)
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := "touch " + marker
	s := session.Session{ID: "s1"}
	tests := []struct {
		tool, args, want string
	}{
		{BashName, `{}`, "missing required argument command"},
		{BashName, `{"description":"d"}`, "missing required argument command"},
		{BashName, `{"command":"  ","description":"d"}`, `invalid command: expected a non-blank string, got "  "`},
		{BashName, `{"command":42,"description":"d"}`, `invalid command: expected a non-blank string, got 42`},
		{BashName, `{"command":"` + cmd + `"}`, "missing required argument description"},
		{BashName, `{"command":"` + cmd + `","description":" "}`, `invalid description: expected a non-blank string, got " "`},
		{BashName, `{"command":"` + cmd + `","description":"d","timeoutMs":0}`, "invalid timeoutMs: expected a positive number, got 0"},
		{BashName, `{"command":"` + cmd + `","description":"d","timeoutMs":-5}`, "invalid timeoutMs: expected a positive number, got -5"},
		{BashName, `{"command":"` + cmd + `","description":"d","timeoutMs":"100"}`, `invalid timeoutMs: expected a positive number, got "100"`},
		{BashName, `{"command":"` + cmd + `","description":"d","timeoutMs":1e309}`, "invalid timeoutMs: expected a positive number, got 1e309"},
		{BashName, `{"command":"` + cmd + `","description":"d","timeoutMs":null}`, "invalid timeoutMs: expected a positive number, got null"},
		{BashName, `{"command":"` + cmd + `","description":"d","workdir":5}`, "invalid workdir: expected a string, got 5"},
		{BashName, `{"command":"` + cmd + `","description":"d","run_in_background":"yes"}`, `invalid run_in_background: expected true or false, got "yes"`},
		{BashName, `[1]`, "invalid arguments: expected a JSON object, got [1]"},
		{BashName, `not json`, "invalid arguments: expected a JSON object, got not json"},
		{BashName, `{"command":"` + cmd + `","description":"d","workdir":"/nonexistent/dsh"}`, "working directory /nonexistent/dsh does not exist"},
		{BashName, `{"command":"` + cmd + `\u0000; true","description":"d"}`, "invalid command: it contains a NUL byte, which bash cannot run"},
		{BashName, `{"command":"` + cmd + `\u0000","description":"d","run_in_background":true}`, "invalid command: it contains a NUL byte, which bash cannot run"},
		// Arguments are read exactly: what a client's approval reads is
		// what runs.
		{BashName, `{"command":"echo SHOWN","description":"d","Command":"` + cmd + `"}`, "invalid arguments: unknown argument Command (argument names are exact: did you mean command?)"},
		{BashName, `{"command":"echo SHOWN","description":"d","command":"` + cmd + `"}`, "invalid arguments: argument command is given twice"},
		{BashName, `{"command":"` + cmd + `","description":"d","extra":[1]}`, "invalid arguments: unknown argument extra (bash takes command, description, input, run_in_background, timeoutMs, tty, workdir)"},
		{BashName, `{"command":"` + cmd + `","description":"d","unsandboxed":true}`, unsandboxedNoSandbox},
		{OutputName, `{"task_id":"bash-1","Task_id":"bash-2"}`, "invalid arguments: unknown argument Task_id (argument names are exact: did you mean task_id?)"},
		{TasksName, `{"all":true}`, "invalid arguments: unknown argument all (bash_tasks takes none)"},
		{OutputName, `{}`, "missing required argument task_id"},
		{OutputName, `{"task_id":""}`, `invalid task_id: expected a non-empty string, got ""`},
		{KillName, `{"task_id":3}`, "invalid task_id: expected a non-empty string, got 3"},
		{OutputName, `{"task_id":"bash-99"}`, `unknown bash task "bash-99"`},
		{KillName, `{"task_id":"bash-99"}`, `unknown bash task "bash-99"`},
		{"no_such_tool", `{}`, `unknown tool "no_such_tool"`},
	}
	for _, tc := range tests {
		res := r.call(t, s, tc.tool, tc.args)
		if !res.IsError || res.Text() != tc.want {
			t.Errorf("%s %s: got %q (isError %v); want %q", tc.tool, tc.args, res.Text(), res.IsError, tc.want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a rejected call ran its command")
	}
	if n := len(listTasks(r.exec)); n != 0 {
		t.Errorf("rejected calls left %d tasks", n)
	}
	// The tools still work.
	if res := r.call(t, s, BashName, `{"command":"echo ok","description":"d"}`); res.IsError || res.Text() != "ok\n" {
		t.Errorf("after bad input: %q", res.Text())
	}
}

func TestWorkdir(t *testing.T) {
	execCwd := t.TempDir()
	r := newRig(t, &local.Options{Cwd: execCwd})
	a, b := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(a, "sub"), 0o755)
	other := t.TempDir()
	tests := []struct {
		name    string
		s       session.Session
		workdir string
		want    string
	}{
		{"session cwd", session.Session{ID: "a", Cwd: a}, "", a},
		{"absolute workdir wins", session.Session{ID: "a", Cwd: a}, other, other},
		{"relative to the session cwd", session.Session{ID: "a", Cwd: a}, "sub", filepath.Join(a, "sub")},
		{"relative dot-dot", session.Session{ID: "a", Cwd: filepath.Join(a, "sub")}, "..", a},
		{"another session, its own cwd", session.Session{ID: "b", Cwd: b}, "", b},
		{"no session cwd: the executor default", session.Session{}, "", execCwd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ar := args{"command": "pwd", "description": "Print the directory"}
			if tc.workdir != "" {
				ar["workdir"] = tc.workdir
			}
			if res := r.call(t, tc.s, BashName, ar); res.Text() != tc.want+"\n" {
				t.Errorf("got %q; want %q", res.Text(), tc.want+"\n")
			}
		})
	}
	// Background tasks too.
	res := r.call(t, session.Session{ID: "b", Cwd: b}, BashName, args{"command": "pwd", "description": "d", "run_in_background": true})
	testwait.Recv(t, r.noticed, "notice of the background pwd's end")
	id := strings.TrimPrefix(res.Text(), "started background task ")
	if out := r.call(t, session.Session{ID: "b"}, OutputName, args{"task_id": id}); out.Text() != b+"\n[status: completed, exit code: 0]" {
		t.Errorf("background pwd: %q", out.Text())
	}
}

func TestBackgroundTasks(t *testing.T) {
	r := newRig(t, nil)
	s := session.Session{ID: "s1"}
	fifo := filepath.Join(t.TempDir(), "go")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	res := r.call(t, s, BashName, args{"command": "read < " + fifo + "; echo one; echo two >&2; exit 4", "description": "d", "run_in_background": true, "timeoutMs": 1})
	if res.IsError || res.Text() != "started background task bash-1" {
		t.Fatalf("start: %q", res.Text())
	}
	// The command is blocked on the FIFO: nothing can have been printed.
	if got := r.call(t, s, OutputName, args{"task_id": "bash-1"}).Text(); got != "(no new output)\n[status: running]" {
		t.Errorf("first read: %q", got)
	}
	testwait.WriteFIFO(t, fifo, "", "background task bash-1")
	testwait.Recv(t, r.noticed, "notice of bash-1's end") // no timeout applied to the background task: it ran to its end
	if got := r.call(t, s, OutputName, args{"task_id": "bash-1"}).Text(); got != "one\n[stderr]\ntwo\n[status: completed, exit code: 4]" {
		t.Errorf("read after the end: %q", got)
	}
	if got := r.call(t, s, OutputName, args{"task_id": "bash-1"}).Text(); got != "(no new output)\n[status: completed, exit code: 4]" {
		t.Errorf("output delivered twice: %q", got)
	}
	if got := r.call(t, s, KillName, args{"task_id": "bash-1"}).Text(); got != "task bash-1 had already finished" {
		t.Errorf("kill after the end: %q", got)
	}
	if got := r.noticesOf("s1"); len(got) != 1 || got[0] != "background task bash-1 finished [status: completed, exit code: 4]; read its output with bash_output" {
		t.Errorf("notices %q", got)
	}
}

func TestOwnership(t *testing.T) {
	r := newRig(t, nil)
	ended := make(chan bash.Task, 10)
	defer r.exec.OnTaskDone(func(tk bash.Task) { ended <- tk })()
	alice, bob, nobody := session.Session{ID: "alice"}, session.Session{ID: "bob"}, session.Session{}
	r.call(t, alice, BashName, args{"command": "sleep 30", "description": "d", "run_in_background": true})   // bash-1
	r.call(t, nobody, BashName, args{"command": "echo open", "description": "d", "run_in_background": true}) // bash-2
	r.call(t, alice, BashName, args{"command": "echo mine", "description": "d", "run_in_background": true})  // bash-3
	for range 2 {
		testwait.Recv(t, ended, "end of bash-2 and bash-3")
	}
	foreign := func(s session.Session, tool, id string) {
		t.Helper()
		res := r.call(t, s, tool, args{"task_id": id})
		if !res.IsError || res.Text() != "task "+id+" belongs to another session" {
			t.Errorf("%s of %s by %q: %q (isError %v)", tool, id, s.ID, res.Text(), res.IsError)
		}
	}
	foreign(bob, OutputName, "bash-1")
	foreign(bob, KillName, "bash-1")
	foreign(nobody, OutputName, "bash-1")
	foreign(nobody, KillName, "bash-1")
	foreign(bob, OutputName, "bash-3")
	// The unowned task is open to all, each read taking what is new.
	if got := r.call(t, bob, OutputName, args{"task_id": "bash-2"}).Text(); got != "open\n[status: completed, exit code: 0]" {
		t.Errorf("bob reads the open task: %q", got)
	}
	if got := r.call(t, alice, OutputName, args{"task_id": "bash-2"}).Text(); got != "(no new output)\n[status: completed, exit code: 0]" {
		t.Errorf("alice reads the open task: %q", got)
	}
	// The owner can still read after completion, and kill its running task.
	if got := r.call(t, alice, OutputName, args{"task_id": "bash-3"}).Text(); got != "mine\n[status: completed, exit code: 0]" {
		t.Errorf("owner reads after completion: %q", got)
	}
	if got := r.call(t, alice, KillName, args{"task_id": "bash-1"}).Text(); got != "killed background task bash-1" {
		t.Errorf("owner kills: %q", got)
	}
	if tk, _ := r.exec.Get(context.Background(), "bash-1"); tk.Status != bash.StatusKilled {
		t.Errorf("bash-1 after the owner's kill: %+v", tk)
	}
}

func TestNotices(t *testing.T) {
	r := newRig(t, nil)
	ended := make(chan bash.Task, 10)
	defer r.exec.OnTaskDone(func(tk bash.Task) { ended <- tk })()
	a := session.Session{ID: "a"}
	r.call(t, a, BashName, args{"command": "exit 2", "description": "d", "run_in_background": true})               // bash-1
	r.call(t, a, BashName, args{"command": "kill -TERM $$", "description": "d", "run_in_background": true})        // bash-2, killed (not by bash_kill)
	r.call(t, session.Session{}, BashName, args{"command": "true", "description": "d", "run_in_background": true}) // bash-3, no owner
	for range 3 {
		testwait.Recv(t, ended, "end of bash-1, bash-2 and bash-3")
	}
	want := []string{
		"background task bash-1 finished [status: completed, exit code: 2]; read its output with bash_output",
		"background task bash-2 finished [status: killed by SIGTERM]; read its output with bash_output",
	}
	got := r.noticesOf("a")
	if len(got) != 2 || !(got[0] == want[0] && got[1] == want[1] || got[0] == want[1] && got[1] == want[0]) {
		t.Errorf("notices %q; want %q", got, want)
	}
	if n := len(r.noticesOf("")); n != 0 {
		t.Errorf("%d notices for an unowned task", n)
	}
	// Nothing after the executor closes, even for tasks it kills then.
	r.call(t, a, BashName, args{"command": "sleep 30", "description": "d", "run_in_background": true})
	if err := r.exec.Close(); err != nil {
		t.Fatal(err)
	}
	if got := r.noticesOf("a"); len(got) > 2 {
		t.Errorf("a notice after Close: %q", got[2:])
	}
}

// TestResultBudget: with the default budget, a foreground result and a
// read of a background task each fit 30,000 characters, begin at a line,
// keep their markers, and name a spill file with the whole stream, also
// for a stream that the executor's memory (64,000 bytes) holds whole.
func TestResultBudget(t *testing.T) {
	r := newRig(t, nil)
	s := session.Session{ID: "s1", Cwd: t.TempDir()}
	check := func(t *testing.T, text string, want string, markers string) {
		t.Helper()
		if n := utf8.RuneCountInString(text); n > DefaultMaxResultChars {
			t.Errorf("%d characters", n)
		}
		head, note, ok := strings.Cut(text, "[output truncated; full output: ")
		if !ok {
			head, note, ok = strings.Cut(text, "[some output was dropped from memory; full output: ")
		}
		if !ok || !strings.HasSuffix(note, markers) {
			t.Fatalf("no note or markers: ...%q", text[max(0, len(text)-300):])
		}
		if !strings.HasSuffix(want, head) || len(head) == len(want) || want[len(want)-len(head)-1] != '\n' {
			t.Errorf("the kept text is not the output's tail from a line start: %q", head[:min(len(head), 40)])
		}
		path, _, _ := strings.Cut(note, "]")
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("spill file %s: %d bytes, %v", path, len(b), err)
		}
	}
	want := lines("", 1, 7000) // 33,894 bytes: over the budget, under the executor's memory
	t.Run("foreground", func(t *testing.T) {
		res := r.call(t, s, BashName, args{"command": "seq 7000; exit 3", "description": "d"})
		check(t, res.Text(), want, "\n[exit code: 3]")
	})
	t.Run("background read", func(t *testing.T) {
		r.call(t, s, BashName, args{"command": "seq 7000", "description": "d", "run_in_background": true})
		testwait.Recv(t, r.noticed, "notice of bash-1's end")
		res := r.call(t, s, OutputName, args{"task_id": "bash-1"})
		check(t, res.Text(), want, "\n[status: completed, exit code: 0]")
	})
}

// TestNoticesNeverRedundant checks which notices wait for TakeNotices: one
// per ended task of the session, once; none for a task whose final status
// the session has read or which it killed; none after the session ended.
func TestNoticesNeverRedundant(t *testing.T) {
	r := newRig(t, nil)
	a, b := session.Session{ID: "a"}, session.Session{ID: "b"}
	bg := func(s session.Session, cmd string) {
		r.call(t, s, BashName, args{"command": cmd, "description": "d", "run_in_background": true})
	}
	bg(a, "exit 3")   // bash-1: ends; a reads its end
	bg(a, "exit 4")   // bash-2: ends; nobody reads it
	bg(a, "sleep 30") // bash-3: a kills it
	bg(b, "exit 5")   // bash-4: b's
	bg(a, "exit 6")   // bash-5: ends; a calls bash_kill on it afterwards
	for range 4 {
		testwait.Recv(t, r.noticed, "notices of the ends of bash-1, bash-2, bash-4 and bash-5")
	}
	if got := r.call(t, a, KillName, args{"task_id": "bash-5"}).Text(); got != "task bash-5 had already finished" {
		t.Fatalf("kill of an ended task: %q", got)
	}
	if got := r.call(t, a, OutputName, args{"task_id": "bash-1"}).Text(); got != "(no new output)\n[status: completed, exit code: 3]" {
		t.Fatalf("read: %q", got)
	}
	r.call(t, a, KillName, args{"task_id": "bash-3"})
	want := []string{"background task bash-2 finished [status: completed, exit code: 4]; read its output with bash_output"}
	if got := taskLines(&r.tb.notices, "a"); !slices.Equal(got, want) {
		t.Errorf("a's notices %q; want %q", got, want)
	}
	if got := taskLines(&r.tb.notices, "a"); len(got) != 0 {
		t.Errorf("notices delivered twice: %q", got)
	}
	for _, n := range r.noticesOf("a") {
		if strings.Contains(n, "bash-3") {
			t.Errorf("a was told of the end of the task it killed: %q", n)
		}
	}
	r.endSession(t, "b")
	if got := taskLines(&r.tb.notices, "b"); len(got) != 0 {
		t.Errorf("notices of an ended session: %q", got)
	}
}

// TestNoticeAfterRead covers the other order: the owner reads a task's
// final status before the executor tells its listeners; the notice that
// comes then is dropped.
func TestNoticeAfterRead(t *testing.T) {
	var box noticeBox
	end := bash.Task{ID: "bash-7", Owner: "a", Status: bash.StatusCompleted}
	box.seenEnd("a", end.ID)
	if _, ok := box.add(end); ok {
		t.Error("a notice was queued after its task's end was read")
	}
	other := bash.Task{ID: "bash-8", Owner: "a", Status: bash.StatusKilled}
	if _, ok := box.add(other); !ok {
		t.Error("an unread task's notice was not queued")
	}
	for i := range 2 * maxSeenEnds {
		box.seenEnd("a", bash.TaskID(fmt.Sprint("bash-x", i)))
	}
	if len(box.seen) > maxSeenEnds || len(box.order) > maxSeenEnds {
		t.Errorf("the memory of read ends grows: %d, %d", len(box.seen), len(box.order))
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

func TestEndSession(t *testing.T) {
	r := newRig(t, nil)
	for _, s := range []session.Session{{ID: "a"}, {ID: "a"}, {ID: "b"}, {}} {
		r.call(t, s, BashName, args{"command": "sleep 30", "description": "d", "run_in_background": true})
	}
	r.endSession(t, "a")
	want := map[bash.TaskID]bash.TaskStatus{"bash-1": bash.StatusKilled, "bash-2": bash.StatusKilled, "bash-3": bash.StatusRunning, "bash-4": bash.StatusRunning}
	for id, st := range want {
		if tk, _ := r.exec.Get(context.Background(), id); tk.Status != st {
			t.Errorf("%s: %s; want %s", id, tk.Status, st)
		}
	}
	r.endSession(t, "") // unowned tasks belong to no session
	if tk, _ := r.exec.Get(context.Background(), "bash-4"); tk.Status != bash.StatusRunning {
		t.Errorf("EndSession(\"\") killed an unowned task")
	}
}

// listTasks is e.List, which never fails for the local executor.
func listTasks(e *local.Executor) []bash.Task {
	l, _ := e.List(context.Background())
	return l
}
