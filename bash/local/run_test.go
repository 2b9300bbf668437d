//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/testwait"
)

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	dir := t.TempDir()
	tests := []struct {
		name     string
		req      bash.ExecRequest
		stdout   string
		stderr   string
		code     int
		signal   string
		timedOut bool
	}{
		{name: "stdout", req: bash.ExecRequest{Command: "echo hello"}, stdout: "hello\n"},
		{name: "stderr apart", req: bash.ExecRequest{Command: "echo out; echo err >&2"}, stdout: "out\n", stderr: "err\n"},
		{name: "no output", req: bash.ExecRequest{Command: "true"}},
		{name: "exit code", req: bash.ExecRequest{Command: "echo x; exit 3"}, stdout: "x\n", code: 3},
		{name: "false", req: bash.ExecRequest{Command: "false"}, code: 1},
		{name: "command not found", req: bash.ExecRequest{Command: "no-such-command-dsh"}, code: 127,
			stderr: "bash: line 1: no-such-command-dsh: command not found\n"},
		{name: "workdir", req: bash.ExecRequest{Command: "pwd", Workdir: dir}, stdout: dir + "\n"},
		{name: "relative workdir", req: bash.ExecRequest{Command: "pwd", Workdir: "."}, stdout: e.cwd + "\n"},
		{name: "signal death", req: bash.ExecRequest{Command: "kill -KILL $$"}, code: -1, signal: "SIGKILL"},
		{name: "stdin is /dev/null: cat", req: bash.ExecRequest{Command: "cat; echo done"}, stdout: "done\n"},
		{name: "stdin is /dev/null: read", req: bash.ExecRequest{Command: "read x; echo rc=$?"}, stdout: "rc=1\n"},
		{name: "no terminal", req: bash.ExecRequest{Command: "exec 3</dev/tty || echo no tty"}, stdout: "no tty\n",
			stderr: "bash: line 1: /dev/tty: No such device or address\n", code: 0},
		{name: "no rc files", req: bash.ExecRequest{Command: "shopt -q login_shell || echo not login; [[ $- != *i* ]] && echo not interactive"},
			stdout: "not login\nnot interactive\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, e, tc.req)
			if res.Stdout.Text != tc.stdout || res.Stderr.Text != tc.stderr {
				t.Errorf("stdout %q stderr %q; want %q and %q", res.Stdout.Text, res.Stderr.Text, tc.stdout, tc.stderr)
			}
			if res.ExitCode != tc.code || res.Signal != tc.signal || res.TimedOut != tc.timedOut {
				t.Errorf("exit %d signal %q timedOut %v; want %d %q %v", res.ExitCode, res.Signal, res.TimedOut, tc.code, tc.signal, tc.timedOut)
			}
			if res.Stdout.Truncated || res.Stderr.Truncated || res.Adopted != "" {
				t.Errorf("unexpected truncation or adoption: %+v", res)
			}
		})
	}
}

func TestRunInfrastructureErrors(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		spec bash.ExecSpec
		want string
		is   error
	}{
		{name: "missing workdir", spec: bash.ExecSpec{Command: "true", Workdir: "/nonexistent/dsh", Timeout: time.Second},
			want: "working directory /nonexistent/dsh does not exist"},
		{name: "workdir is a file", spec: bash.ExecSpec{Command: "true", Workdir: file, Timeout: time.Second},
			want: "working directory " + file + " is not a directory"},
		{name: "unresolved spec", spec: bash.ExecSpec{Command: "true", Workdir: "/"},
			want: "the spec has no timeout: resolve the request first"},
		{name: "context already done", ctx: done, spec: bash.ExecSpec{Command: "true", Workdir: "/", Timeout: time.Second},
			want: "command aborted before it started: context canceled", is: bash.ErrAborted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			_, err := e.Run(ctx, tc.spec)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err does not match %v", tc.is)
			}
		})
	}
	if got := listTasks(e); len(got) != 0 {
		t.Errorf("failed runs left tasks: %v", got)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{Cwd: "/tmp", Timeout: 2 * time.Second, MaxTimeout: 5 * time.Second})
	tests := []struct {
		req     bash.ExecRequest
		workdir string
		timeout time.Duration
		err     string
	}{
		{req: bash.ExecRequest{Command: "x"}, workdir: "/tmp", timeout: 2 * time.Second},
		{req: bash.ExecRequest{Command: "x", Workdir: "/etc", Timeout: time.Second}, workdir: "/etc", timeout: time.Second},
		{req: bash.ExecRequest{Command: "x", Workdir: "a/../b"}, workdir: "/tmp/b", timeout: 2 * time.Second},
		{req: bash.ExecRequest{Command: "x", Timeout: time.Hour}, workdir: "/tmp", timeout: 5 * time.Second},
		{req: bash.ExecRequest{Command: "x", Timeout: -time.Second}, err: "the timeout must be positive, got -1s"},
		{req: bash.ExecRequest{Command: "  "}, err: "the command is empty"},
	}
	for _, tc := range tests {
		spec, err := e.Resolve(context.Background(), tc.req)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Resolve(%+v) err = %v; want %q", tc.req, err, tc.err)
			}
			continue
		}
		if err != nil || spec.Workdir != tc.workdir || spec.Timeout != tc.timeout || spec.Command != "x" {
			t.Errorf("Resolve(%+v) = %+v, %v", tc.req, spec, err)
		}
	}
}

func TestTimeoutDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o            Options
		timeout, max time.Duration
	}{
		{Options{}, 120 * time.Second, 600 * time.Second},
		{Options{MaxTimeout: time.Second}, time.Second, time.Second},
		{Options{MaxTimeout: time.Hour}, 120 * time.Second, time.Hour},
		{Options{Timeout: time.Hour}, time.Hour, time.Hour},
		{Options{Timeout: time.Second}, time.Second, 600 * time.Second},
	}
	for _, tc := range tests {
		e := newExec(t, &tc.o)
		if e.timeout != tc.timeout || e.max != tc.max {
			t.Errorf("%+v: timeout %v max %v; want %v %v", tc.o, e.timeout, e.max, tc.timeout, tc.max)
		}
	}
}

func TestOptionsInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o    Options
		want string
	}{
		{Options{Timeout: -1}, "invalid executor options: Timeout must not be negative (got -1)"},
		{Options{MaxOutputBytes: -5, MaxTasks: -1}, "invalid executor options: MaxOutputBytes must not be negative (got -5); MaxTasks must not be negative (got -1)"},
		{Options{Timeout: time.Hour, MaxTimeout: time.Minute}, "invalid executor options: Timeout 1h0m0s is above MaxTimeout 1m0s"},
		{Options{Env: []string{"NOEQUALS"}}, `invalid executor options: Env entry "NOEQUALS" is not NAME=value`},
		{Options{Containment: 9}, "invalid executor options: Containment 9 is not one of the defined values"},
		{Options{Shell: "/nonexistent/bash"}, "find bash: exec: \"/nonexistent/bash\": stat /nonexistent/bash: no such file or directory"},
	}
	for _, tc := range tests {
		e, err := New(&tc.o)
		if err == nil {
			e.Close()
			t.Errorf("New(%+v) succeeded", tc.o)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("New(%+v) = %q; want %q", tc.o, err, tc.want)
		}
	}
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=/root", "OPENAI_API_KEY=sk-1", "GITHUB_TOKEN=g", "db_password=p",
		"AWS_SECRET_ACCESS_KEY=a", "MY_CREDENTIALS=c", "PASSWD=x", "BASH_ENV=/tmp/evil", "ENV=/tmp/evil",
		"ALLOWED_TOKEN=ok", "TERM=xterm-256color", "PAGER=less"}
	e := newExec(t, &Options{BaseEnv: base, AllowEnv: []string{"ALLOWED_TOKEN"}, Env: []string{"EXTRA=1", "PAGER=more"}})
	res := runCmd(t, e, "env | sort")
	got := strings.Fields(res.Stdout.Text)
	for _, bad := range []string{"OPENAI_API_KEY", "GITHUB_TOKEN", "db_password", "AWS_SECRET_ACCESS_KEY", "MY_CREDENTIALS", "PASSWD", "BASH_ENV", "ENV"} {
		for _, kv := range got {
			if strings.HasPrefix(kv, bad+"=") {
				t.Errorf("%s reached the command", kv)
			}
		}
	}
	for _, want := range []string{"HOME=/root", "ALLOWED_TOKEN=ok", "NO_COLOR=1", "TERM=dumb", "PAGER=more", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "EXTRA=1"} {
		found := false
		for _, kv := range got {
			found = found || kv == want
		}
		if !found {
			t.Errorf("%s missing from %q", want, got)
		}
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{Grace: 300 * time.Millisecond})
	tests := []struct {
		name   string
		cmd    string
		code   int
		signal string
		stdout string
	}{
		{name: "SIGTERM", cmd: "echo start; sleep 30", code: -1, signal: "SIGTERM", stdout: "start\n"},
		{name: "trapped, then SIGKILL", cmd: "trap '' TERM; echo start; while :; do sleep 0.05; done", code: -1, signal: "SIGKILL", stdout: "start\n"},
		{name: "trapped, exits 0", cmd: "trap 'echo bye; exit 0' TERM; echo start; sleep 30 & wait", code: 0, stdout: "start\nbye\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Long enough for bash to set its traps on a loaded machine.
			res := run(t, e, bash.ExecRequest{Command: tc.cmd, Timeout: time.Second})
			if !res.TimedOut || res.Timeout != time.Second {
				t.Errorf("TimedOut %v Timeout %v; want true 1s", res.TimedOut, res.Timeout)
			}
			if res.ExitCode != tc.code || res.Signal != tc.signal || res.Stdout.Text != tc.stdout {
				t.Errorf("exit %d signal %q stdout %q; want %d %q %q", res.ExitCode, res.Signal, res.Stdout.Text, tc.code, tc.signal, tc.stdout)
			}
			if res.Adopted != "" {
				t.Errorf("a timed-out run adopted %s", res.Adopted)
			}
		})
	}
}

// TestTermTrapMayFork: the SIGTERM of a timeout reaches each process of the
// command once; what the shell's TERM trap then starts to clean up is not
// stopped by it (before, a repeated sweep of the cgroup often killed it). A
// race, so it is tried a few times.
func TestTermTrapMayFork(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{Grace: 5 * time.Second})
	for i := range 3 {
		res := run(t, e, bash.ExecRequest{Command: "trap 'sleep 0.05 && echo cleaned; exit 9' TERM; echo start; sleep 30 & wait", Timeout: time.Second})
		if res.ExitCode != 9 || res.Stdout.Text != "start\ncleaned\n" {
			t.Fatalf("try %d: exit %d, signal %q, stdout %q; want 9 and the trap's cleanup", i, res.ExitCode, res.Signal, res.Stdout.Text)
		}
	}
}

// TestRunAfterKill: a command's cgroup that was killed is not reused, so the
// commands after a SIGKILL run normally.
func TestRunAfterKill(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{Grace: 50 * time.Millisecond})
	res := run(t, e, bash.ExecRequest{Command: "trap '' TERM; sleep 30", Timeout: 500 * time.Millisecond})
	if res.Signal != "SIGKILL" {
		t.Fatalf("setup: %+v", res)
	}
	for i := range 20 {
		if res := runCmd(t, e, "exit 7"); res.ExitCode != 7 || res.Signal != "" {
			t.Fatalf("run %d after a kill: exit %d signal %q", i, res.ExitCode, res.Signal)
		}
	}
}

// TestTimeoutKillsTree checks by pid that a timeout kills grandchildren, and
// (with a cgroup) descendants that left the process group with setsid.
func TestTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			e := newExec(t, &Options{Containment: mode, Grace: 300 * time.Millisecond})
			pids := filepath.Join(t.TempDir(), "pids")
			// Made first: the wait loop's wc would fail on a missing file,
			// and so end the loop before the pids are written.
			if err := os.WriteFile(pids, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			sp := newSyncPoint(t)
			escaped, n := "", 2
			if mode == ContainCgroup {
				escaped, n = `setsid -f bash -c 'echo $$ >> `+pids+`; exec sleep 32'`, 3
			}
			cmd := fmt.Sprintf(`(sleep 30 & echo $! >> %[1]s; wait) &
(trap '' TERM; sleep 31 & echo $! >> %[1]s; wait) &
%[2]s
while [ "$(wc -l < %[1]s)" -lt %[3]d ]; do sleep 0.01; done
echo > %[4]s
wait`, pids, escaped, n, sp.fifo)
			got := make(chan bash.RunResult, 1)
			go func() { got <- run(t, e, bash.ExecRequest{Command: cmd, Timeout: 2 * time.Second}) }()
			sp.reached(t)
			all := readPids(t, pids)
			for _, pid := range all {
				if !alive(pid) {
					t.Fatalf("process %d died before the timeout", pid)
				}
			}
			res := <-got
			if !res.TimedOut {
				t.Errorf("not timed out: %+v", res)
			}
			assertDead(t, all...)
		})
	}
}

func TestAbort(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	sp := newSyncPoint(t)
	ctx, cancel := context.WithCancel(context.Background())
	spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "echo started; echo > " + sp.fifo + "; sleep 30"})
	type out struct {
		res bash.RunResult
		err error
	}
	got := make(chan out, 1)
	go func() {
		res, err := e.Run(ctx, spec)
		got <- out{res, err}
	}()
	sp.reached(t)
	cancel()
	o := <-got
	if !errors.Is(o.err, bash.ErrAborted) || o.err.Error() != "command aborted: context canceled" {
		t.Errorf("err = %v; want command aborted", o.err)
	}
	if !o.res.Aborted || o.res.Signal != "SIGTERM" || o.res.Stdout.Text != "started\n" {
		t.Errorf("result %+v", o.res)
	}
}

// TestLeftoversAdopted: a foreground command whose children outlive the
// shell returns at once with what it printed, and the leftovers become a
// background task of the same owner that Kill stops.
func TestLeftoversAdopted(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			e := newExec(t, &Options{Containment: mode})
			pids := filepath.Join(t.TempDir(), "pids")
			begin := time.Now()
			res := run(t, e, bash.ExecRequest{Command: "sleep 30 & echo $! > " + pids + "; echo hi", Owner: "alice"})
			took := time.Since(begin)
			if res.Stdout.Text != "hi\n" || res.ExitCode != 0 || res.Adopted == "" {
				t.Fatalf("result %+v", res)
			}
			t.Logf("returned in %v", took)
			pid := readPids(t, pids)[0]
			if !alive(pid) {
				t.Fatal("the leftover sleep died early")
			}
			task, err := e.Get(context.Background(), res.Adopted)
			if err != nil || task.Owner != "alice" || task.Status != bash.StatusRunning {
				t.Fatalf("adopted task %+v, %v", task, err)
			}
			killed, err := e.Kill(context.Background(), res.Adopted)
			if !killed || err != nil {
				t.Fatalf("Kill = %v, %v", killed, err)
			}
			assertDead(t, pid)
			task, _ = e.Get(context.Background(), res.Adopted)
			if task.Status != bash.StatusKilled || task.ExitCode != 0 {
				t.Errorf("after kill: %+v", task)
			}
		})
	}
}

// TestTraceeKilled: a command whose thread (not its main one) made itself
// the executor's tracee (PTRACE_TRACEME) is still stopped and reaped when it
// times out; such a thread's zombie holds the whole process unreaped until
// its tracer reaps it.
func TestTraceeKilled(t *testing.T) {
	t.Parallel()
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			// Not newExec: its Close in the cleanup would wait for ever
			// where the defence is missing; this one is bounded.
			e, err := New(testOptions(&Options{Containment: mode, Grace: 100 * time.Millisecond,
				ReapBound: 100 * time.Millisecond, SpillDir: t.TempDir()}))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				closed := make(chan error, 1)
				go func() { closed <- e.Close() }()
				if err := testwait.Recv(t, closed, "return from the executor's Close"); err != nil {
					t.Error(err)
				}
			}()
			// The timeout leaves a race-built helper on a loaded machine
			// the time to start and say it is traced.
			spec, err := e.Resolve(context.Background(), bash.ExecRequest{Command: helperCmd(t, "traceme"), Timeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				res bash.RunResult
				err error
			}
			ran := make(chan result, 1)
			go func() {
				res, err := e.Run(context.Background(), spec)
				ran <- result{res, err}
			}()
			r := testwait.Recv(t, ran, "end of a traced command's run after its timeout")
			if r.err != nil || !r.res.TimedOut || r.res.Stdout.Text != "traced\n" {
				t.Fatalf("Run = %+v, %v; want timed out after printing traced", r.res, r.err)
			}
		})
	}
}

// TestSlowReaderNotAdopted: a command that has ended, with nothing of it
// left alive, is not adopted as leftovers because its output is still
// being read when the drain delay is over (as on a loaded machine, where
// the readers run late): its result is whole, and it has no task.
func TestSlowReaderNotAdopted(t *testing.T) {
	t.Parallel()
	const drain = 20 * time.Millisecond
	for name, mode := range modes(t) {
		t.Run(name, func(t *testing.T) {
			e := newExec(t, &Options{Containment: mode, DrainDelay: drain, ReapBound: 20 * time.Second})
			spec, err := e.Resolve(context.Background(), bash.ExecRequest{Command: "echo first; echo second >&2; exit 3"})
			if err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			spec.OnOutput = func(bash.Stream, []byte) {
				// The stand-in for a reader that runs late: it holds the
				// output until long after the drain delay. (An observer
				// must not block; this one does on purpose.)
				once.Do(func() { time.Sleep(10 * drain) })
			}
			res, err := e.Run(context.Background(), spec)
			if err != nil || res.Adopted != "" || res.ExitCode != 3 || res.Stdout.Text != "first\n" || res.Stderr.Text != "second\n" {
				t.Fatalf("Run = %+v, %v; want exit 3 with its whole output and no adopted task", res, err)
			}
			if tasks, _ := e.List(context.Background()); len(tasks) != 0 {
				t.Errorf("tasks %+v; want none", tasks)
			}
		})
	}
}

// TestLeftoversOutputRead: output the leftovers print after the foreground
// result is read with ReadOutput, and the task completes with the shell's
// exit code once they end.
func TestLeftoversOutputRead(t *testing.T) {
	t.Parallel()
	e := newExec(t, nil)
	sp := newSyncPoint(t)
	done := make(chan bash.Task, 1)
	defer e.OnTaskDone(func(tk bash.Task) { done <- tk })()
	res := runCmd(t, e, "(read < "+sp.fifo+"; echo later) & echo now; exit 4")
	if res.Stdout.Text != "now\n" || res.ExitCode != 4 || res.Adopted == "" {
		t.Fatalf("result %+v", res)
	}
	w, err := os.OpenFile(sp.fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("go\n")
	w.Close()
	tk := <-done
	if tk.ID != res.Adopted || tk.Status != bash.StatusCompleted || tk.ExitCode != 4 {
		t.Errorf("done %+v", tk)
	}
	r, err := e.ReadOutput(context.Background(), res.Adopted)
	if err != nil || r.Stdout.Text != "later\n" || !r.Task.Done() {
		t.Errorf("read %+v, %v", r, err)
	}
}

func TestLeftoversOverLimitKilled(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{MaxTasksPerOwner: 1})
	start(t, e, "sleep 30", "bob")
	pids := filepath.Join(t.TempDir(), "pids")
	res := run(t, e, bash.ExecRequest{Command: "sleep 30 & echo $! > " + pids + "; echo hi", Owner: "bob"})
	if res.Adopted != "" || !res.LeftoversKilled || res.Stdout.Text != "hi\n" {
		t.Fatalf("result %+v", res)
	}
	assertDead(t, readPids(t, pids)...)
}

// TestOnOutput: a foreground run streams its output to the observer as it
// arrives, stdout and stderr alike, never splitting a character, and the
// pieces add up to the whole output.
func TestOnOutput(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{MaxOutputBytes: 10})
	sp := newSyncPoint(t)
	var mu sync.Mutex
	var got strings.Builder
	streams := map[bash.Stream]string{}
	first := make(chan struct{})
	spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: `printf 'one \xe2\x82'; printf 'err\n' >&2; read < ` + sp.fifo + `; printf '\xac two\n'; sleep 30 & echo left`})
	spec.OnOutput = func(s bash.Stream, b []byte) {
		text := string(b)
		mu.Lock()
		defer mu.Unlock()
		if !utf8.ValidString(text) {
			t.Errorf("invalid UTF-8 piece %q", text)
		}
		got.WriteString(text)
		streams[s] += text
		if strings.Contains(got.String(), "err") && strings.Contains(got.String(), "one ") {
			select {
			case <-first:
			default:
				close(first)
			}
		}
	}
	done := make(chan bash.RunResult, 1)
	go func() {
		res, _ := e.Run(context.Background(), spec)
		done <- res
	}()
	<-first // both streams arrived while the command still runs
	mu.Lock()
	if s := got.String(); strings.Contains(s, "\uFFFD") || strings.Contains(s, "€") {
		t.Errorf("a partial character was passed on: %q", s)
	}
	mu.Unlock()
	w, _ := os.OpenFile(sp.fifo, os.O_WRONLY, 0)
	w.WriteString("\n")
	w.Close()
	res := <-done
	if res.Adopted == "" {
		t.Fatalf("no adoption: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if streams[bash.Stdout] != "one € two\nleft\n" || streams[bash.Stderr] != "err\n" {
		t.Errorf("observed %q", streams)
	}
	if all := got.String(); len(all) != len("one € two\nerr\nleft\n") {
		t.Errorf("observed %q in all", all)
	}
}

// TestShellControlScrubbed: exported functions and shell options in the
// executor's environment do not reach bash. Both would today: SHELLOPTS
// turns on tracing before the command runs, and an exported function named
// echo replaces the builtin.
func TestShellControlScrubbed(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=" + os.Getenv("PATH"), "SHELLOPTS=xtrace", "BASHOPTS=xpg_echo",
		"BASH_FUNC_echo%%=() {  builtin echo pwned; }", "BASH_ENV=/dev/null"}
	e := newExec(t, &Options{BaseEnv: base})
	res := runCmd(t, e, `echo hi; echo 'a\tb'`)
	if res.Stdout.Text != "hi\na\\tb\n" || res.Stderr.Text != "" || res.ExitCode != 0 {
		t.Errorf("stdout %q stderr %q exit %d; want \"hi\\na\\\\tb\\n\", nothing, 0", res.Stdout.Text, res.Stderr.Text, res.ExitCode)
	}
}

// TestAbortWhileStarting: a call whose context ends while its shell is
// being started (a sandbox's jail whose start is cut short) is aborted,
// whatever error the spawner gave up with: the same event reads the same
// however far the start had got.
func TestAbortWhileStarting(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 2)
	e := newExec(t, &Options{Spawn: func(ctx context.Context, req *SpawnRequest) (Process, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, fmt.Errorf("start the session's sandbox: %w", ctx.Err())
	}})
	spec := bash.ExecSpec{Command: "true", Workdir: "/", Timeout: time.Minute}
	for _, call := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"Run", func(ctx context.Context) error { _, err := e.Run(ctx, spec); return err }},
		{"Start", func(ctx context.Context) error { _, err := e.Start(ctx, spec); return err }},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- call.do(ctx) }()
		testwait.Recv(t, entered, "the spawner's start")
		cancel()
		err := testwait.Recv(t, errc, call.name+"'s return")
		if !errors.Is(err, bash.ErrAborted) || strings.Contains(err.Error(), "sandbox") {
			t.Errorf("%s: %v; want an abort", call.name, err)
		}
	}
}
