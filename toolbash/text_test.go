package toolbash

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got[name] with the sections of a txtar file in testdata.
// Each section holds the text plus one newline, so a text's own trailing
// newline (or its absence) is exact. With -update the file is rewritten.
func golden(t *testing.T, file string, names []string, got map[string]string) {
	t.Helper()
	path := "testdata/" + file
	if *update {
		ar := &txtar.Archive{Comment: []byte("Golden model-facing texts; regenerate with go test -update.\n")}
		for _, n := range names {
			ar.Files = append(ar.Files, txtar.File{Name: n, Data: []byte(got[n] + "\n")})
		}
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	want := map[string]string{}
	for _, f := range ar.Files {
		want[f.Name] = strings.TrimSuffix(string(f.Data), "\n")
	}
	for _, n := range names {
		w, ok := want[n]
		if !ok {
			t.Errorf("%s: no golden text in %s (run go test -update)", n, path)
			continue
		}
		if got[n] != w {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", n, got[n], w)
		}
	}
	if len(want) != len(names) {
		t.Errorf("%s holds %d texts, the test makes %d (run go test -update)", path, len(want), len(names))
	}
}

func out(text string) bash.Output { return bash.Output{Text: text} }

func TestRunTextGolden(t *testing.T) {
	spill := "/tmp/dsh-spill-1/stdout-ab12.log"
	cases := []struct {
		name string
		r    bash.RunResult
	}{
		{"plain-stdout", bash.RunResult{Stdout: out("hello\n")}},
		{"no-output", bash.RunResult{}},
		{"stderr-only", bash.RunResult{Stderr: out("warning: x\n")}},
		{"stdout-no-newline-then-stderr", bash.RunResult{Stdout: out("partial"), Stderr: out("err\n")}},
		{"stdout-and-stderr", bash.RunResult{Stdout: out("out\n"), Stderr: out("err\n")}},
		{"exit-code", bash.RunResult{Stdout: out("x\n"), ExitCode: 3}},
		{"exit-code-no-output", bash.RunResult{ExitCode: 1}},
		{"exit-code-no-trailing-newline", bash.RunResult{Stdout: out("x"), ExitCode: 2}},
		{"timeout-and-signal", bash.RunResult{Stdout: out("start\n"), TimedOut: true, Timeout: 2 * time.Second, ExitCode: -1, Signal: "SIGTERM"}},
		{"timeout-sigkill", bash.RunResult{TimedOut: true, Timeout: 500 * time.Millisecond, ExitCode: -1, Signal: "SIGKILL"}},
		{"timeout-trapped-exit-0", bash.RunResult{Stdout: out("bye\n"), TimedOut: true, Timeout: 1500 * time.Millisecond}},
		{"timeout-trapped-exit-1", bash.RunResult{Stdout: out("bye"), TimedOut: true, Timeout: 100 * time.Millisecond, ExitCode: 1}},
		{"signal-no-timeout", bash.RunResult{Stdout: out("x\n"), ExitCode: -1, Signal: "SIGKILL"}},
		{"truncated-with-path", bash.RunResult{Stdout: bash.Output{Text: "99\n100\n", Truncated: true, SpillPath: spill}}},
		{"truncated-unavailable", bash.RunResult{Stdout: bash.Output{Text: "99\n100", Truncated: true}}},
		{"truncated-stderr", bash.RunResult{Stdout: out("ok\n"), Stderr: bash.Output{Text: "e9\n", Truncated: true, SpillPath: "/tmp/dsh-spill-1/stderr-cd34.log"}, ExitCode: 1}},
		{"adopted", bash.RunResult{Stdout: out("started\n"), Adopted: "bash-4"}},
		{"adopted-exit-code", bash.RunResult{Stdout: out("hi"), ExitCode: 2, Adopted: "bash-5"}},
		{"leftovers-killed", bash.RunResult{Stdout: out("hi\n"), LeftoversKilled: true}},
	}
	got := map[string]string{}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
		got[c.name] = RunText(c.r)
	}
	golden(t, "run.txtar", names, got)
}

func TestTaskTextsGolden(t *testing.T) {
	running := bash.Task{ID: "bash-3", Status: bash.StatusRunning}
	completed := bash.Task{ID: "bash-3", Status: bash.StatusCompleted, ExitCode: 0}
	failedExit := bash.Task{ID: "bash-3", Status: bash.StatusCompleted, ExitCode: 7}
	killed := bash.Task{ID: "bash-3", Status: bash.StatusKilled}
	killedSig := bash.Task{ID: "bash-3", Status: bash.StatusKilled, ExitCode: -1, Signal: "SIGTERM"}
	failed := bash.Task{ID: "bash-3", Status: bash.StatusFailed, ExitCode: -1, Err: "working directory /x does not exist"}
	p1, p2 := "/tmp/dsh-spill-1/stdout-1.log", "/tmp/dsh-spill-1/stderr-2.log"
	cases := []struct {
		name string
		text string
	}{
		{"start", StartText(running)},
		{"read-new-output", ReadText(bash.TaskRead{Task: running, Stdout: out("line 1\nline 2\n")})},
		{"read-no-new-output", ReadText(bash.TaskRead{Task: running})},
		{"read-stderr", ReadText(bash.TaskRead{Task: running, Stdout: out("out"), Stderr: out("err\n")})},
		{"read-stderr-only", ReadText(bash.TaskRead{Task: running, Stderr: out("err\n")})},
		{"read-lossy-paths", ReadText(bash.TaskRead{Task: running, Stdout: bash.Output{Text: "tail\n", Truncated: true, SpillPath: p1}, Stderr: bash.Output{Text: "etail\n", Truncated: true, SpillPath: p2}})},
		{"read-lossy-one-path", ReadText(bash.TaskRead{Task: running, Stdout: bash.Output{Text: "tail\n", Truncated: true, SpillPath: p1}})},
		{"read-lossy-unavailable", ReadText(bash.TaskRead{Task: running, Stdout: bash.Output{Text: "tail", Truncated: true}})},
		{"read-completed", ReadText(bash.TaskRead{Task: completed, Stdout: out("done\n")})},
		{"read-completed-exit-code", ReadText(bash.TaskRead{Task: failedExit})},
		{"read-killed", ReadText(bash.TaskRead{Task: killed})},
		{"read-killed-by-signal", ReadText(bash.TaskRead{Task: killedSig, Stdout: out("partial")})},
		{"read-failed", ReadText(bash.TaskRead{Task: failed})},
		{"kill-killed", KillText("bash-3", true)},
		{"kill-finished", KillText("bash-3", false)},
		{"notice-completed", NoticeText(completed)},
		{"notice-killed", NoticeText(killedSig)},
		{"foreign-task", ForeignTaskText("bash-3")},
	}
	got := map[string]string{}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
		got[c.name] = c.text
	}
	golden(t, "tasks.txtar", names, got)
}
