//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/permission"
	"golang.org/x/sys/unix"
)

// guardWorld is a workspace and a bin directory with zap, a copy of
// touch: zap NAME makes the file NAME in the command's directory.
type guardWorld struct{ dir, bin string }

func newGuardWorld(t *testing.T) guardWorld {
	t.Helper()
	w := guardWorld{dir: t.TempDir()}
	w.bin = filepath.Join(w.dir, ".bin")
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip("no touch")
	}
	err = os.Mkdir(w.bin, 0o755)
	if err == nil {
		err = proctest.CopyProgram(touch, filepath.Join(w.bin, "zap"))
	}
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// exec makes an executor whose commands run in the world with zap first
// on PATH, every exec checked against deny.
func (w guardWorld) exec(t *testing.T, deny ...string) *Executor {
	t.Helper()
	rules, err := permission.NewExecRules(deny, w.bin)
	if err != nil {
		t.Fatal(err)
	}
	return newExec(t, &Options{Cwd: w.dir, ExecRules: rules,
		Env: []string{"PATH=" + w.bin + ":" + os.Getenv("PATH")}})
}

func (w guardWorld) made(names ...string) []string {
	var found []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(w.dir, n)); err == nil {
			found = append(found, n)
		}
	}
	return found
}

// TestExecRulesRefuse: a denied program is refused at its exec, in a
// foreground run and in a background task, and the result says which.
func TestExecRulesRefuse(t *testing.T) {
	w := newGuardWorld(t)
	e := w.exec(t, "zap")
	res := runCmd(t, e, "echo made | xargs zap; zap made2 || echo refused $?")
	if got := w.made("made", "made2"); len(got) > 0 {
		t.Fatalf("zap ran: made %q", got)
	}
	if !strings.Contains(res.Stdout.Text, "refused 137") {
		t.Errorf("stdout %q: the shell did not see its child killed", res.Stdout.Text)
	}
	want := []bash.Refusal{
		{Program: filepath.Join(w.bin, "zap"), Argv: []string{"zap", "made"}, Rule: "zap"},
		{Program: filepath.Join(w.bin, "zap"), Argv: []string{"zap", "made2"}, Rule: "zap"},
	}
	if fmt.Sprint(res.Refused) != fmt.Sprint(want) || res.RefusedMore != 0 {
		t.Errorf("Refused %+v (more %d), want %+v", res.Refused, res.RefusedMore, want)
	}

	done := make(chan bash.Task, 1)
	defer e.OnTaskDone(func(t bash.Task) { done <- t })()
	task := start(t, e, "for i in 1 2 3 4 5 6 7; do zap bg-$i; done; zap bg-1", "")
	r := waitDone(t, e, task.ID, done)
	if len(r.Refused) != bash.MaxRefusals || r.RefusedMore != 3 {
		t.Errorf("task's final read: %d refusals and %d more, want %d and 3", len(r.Refused), r.RefusedMore, bash.MaxRefusals)
	}
	again, err := e.ReadOutput(context.Background(), task.ID)
	if err != nil || len(again.Refused) != 0 {
		t.Errorf("a second read gave the refusals again: %+v, %v", again.Refused, err)
	}
}

// TestExecRulesInput: what is typed into an interactive task is checked
// where it runs (the rules check only the command that starts it), and
// the task's prompt and its input probe work under the tracer.
func TestExecRulesInput(t *testing.T) {
	w := newGuardWorld(t)
	e := w.exec(t, "zap")
	done := make(chan bash.Task, 1)
	defer e.OnTaskDone(func(t bash.Task) { done <- t })()
	task := startInput(t, e, bash.ExecRequest{Command: "while read -r line; do eval \"$line\"; done"}, nil)
	r, err := e.WriteInput(context.Background(), task.ID, bash.Input{Data: []byte("zap typed; echo next\n"), Wait: 10 * time.Second})
	if err != nil || !r.Task.WaitingInput || !strings.Contains(r.Stdout.Text, "next") {
		t.Fatalf("after the input: %+v, %v", r, err)
	}
	eof, err := e.WriteInput(context.Background(), task.ID, bash.Input{EOF: true})
	if err != nil {
		t.Fatal(err)
	}
	r = waitDone(t, e, task.ID, done)
	refused := append(eof.Refused, r.Refused...) // the read that saw the end has them
	if got := w.made("typed"); len(got) > 0 || len(refused) != 1 || refused[0].Argv[1] != "typed" {
		t.Errorf("typed zap: made %q, refused %+v", got, refused)
	}
}

// TestExecRulesUntracedClone: a command cannot start a process its
// tracer is not told of (clone with CLONE_UNTRACED, clone3), which would
// run anything unchecked. Found by an attack; without the filter's clone
// check zap runs.
func TestExecRulesUntracedClone(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl")
	}
	w := newGuardWorld(t)
	e := w.exec(t, "zap")
	for name, script := range proctest.UntracedClones("made") {
		t.Run(name, func(t *testing.T) {
			res := runCmd(t, e, "perl -e "+permission.QuoteWord(script))
			if got := w.made("made"); len(got) > 0 {
				t.Fatalf("zap ran untraced: %q %q", res.Stdout.Text, res.Stderr.Text)
			}
		})
	}
	res := runCmd(t, e, "perl -e 'my $pid = fork(); if ($pid == 0) { exec \"zap\", \"forked\" } waitpid($pid, 0); print \"ok\n\"'")
	if got := w.made("forked"); len(got) > 0 || res.Stdout.Text != "ok\n" || len(res.Refused) != 1 {
		t.Errorf("perl's own fork: %+v", res)
	}
}

// waitDone reads a task until it has ended and returns that read.
func waitDone(t *testing.T, e *Executor, id bash.TaskID, done <-chan bash.Task) bash.TaskRead {
	t.Helper()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("task %s did not end within 20 s", id)
	}
	r, err := e.ReadOutput(context.Background(), id)
	if err != nil || !r.Task.Done() {
		t.Fatalf("task %s: %+v, %v", id, r.Task, err)
	}
	return r
}

// TestExecRulesMemoryWrite: a command cannot rewrite the argv of a child
// stopped at its exec from outside it (/proc/PID/mem, process_vm_writev)
// between the check and the child's first instruction: the tree may not
// write another process's memory. Without execguard.HardenThread the
// rewritten argv runs in some of the tries.
func TestExecRulesMemoryWrite(t *testing.T) {
	w := newGuardWorld(t)
	e := w.exec(t, "zap no-*")
	const tries = 30
	res := runCmd(t, e, helperCmd(t, "memwrite "+filepath.Join(w.bin, "zap")+" "+strconv.Itoa(tries)))
	var names []string
	for i := range tries {
		names = append(names, fmt.Sprintf("no-%04d", i))
	}
	if got := w.made(names...); len(got) > 0 {
		t.Fatalf("rewritten argvs ran: %q (helper said %q%q)", got, res.Stdout.Text, res.Stderr.Text)
	}
	t.Logf("helper: %s", strings.TrimSpace(res.Stdout.Text+res.Stderr.Text))
	if !strings.Contains(res.Stdout.Text, "written=0 ") {
		t.Errorf("the helper wrote a child's memory: %q", res.Stdout.Text)
	}
}

// memWrite starts prog ok-I, n times, and rewrites each child's argv[1]
// to no-I from outside as soon as it can: alternately through
// /proc/PID/mem and process_vm_writev. It prints how many writes landed
// and how many were refused.
func memWrite(prog string, n int) int {
	var written, refused, missed int
	for i := range n {
		cmd := exec.Command(prog, fmt.Sprintf("ok-%04d", i))
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		err := rewriteArgv(cmd.Process.Pid, len(prog)+1, fmt.Sprintf("no-%04d", i), i%2 == 0)
		switch {
		case err == nil:
			written++
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			refused++
		default:
			missed++
		}
		_ = cmd.Wait()
	}
	fmt.Printf("written=%d refused=%d missed=%d\n", written, refused, missed)
	return 0
}

// rewriteArgv writes s at offset off of pid's argument area.
func rewriteArgv(pid, off int, s string, viaMem bool) error {
	var err error
	for range 1000 {
		var start uint64
		if start, err = argStart(pid); err != nil {
			continue
		}
		if viaMem {
			var f *os.File
			if f, err = os.OpenFile("/proc/"+strconv.Itoa(pid)+"/mem", os.O_WRONLY, 0); err == nil {
				_, err = f.WriteAt([]byte(s), int64(start)+int64(off))
				f.Close()
			}
		} else {
			local := []unix.Iovec{{Base: &[]byte(s)[0], Len: uint64(len(s))}}
			remote := []unix.RemoteIovec{{Base: uintptr(start) + uintptr(off), Len: len(s)}}
			_, err = unix.ProcessVMWritev(pid, local, remote, 0)
		}
		if err == nil || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return err
		}
	}
	return err
}

// argStart reads the start of pid's argument area from its stat
// (field 48), once it has exec'd (the field is 0 before).
func argStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 46 {
		return 0, errors.New("short stat")
	}
	v, err := strconv.ParseUint(f[45], 10, 64) // field 48, counted from 3
	if err == nil && v == 0 {
		err = errors.New("no argument area yet")
	}
	return v, err
}
