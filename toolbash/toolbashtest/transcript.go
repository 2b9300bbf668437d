//go:build linux

package toolbashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/session"
	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
	"golang.org/x/tools/txtar"
)

// Transcript drives the tools of package toolbash over an executor
// made by newExec through a fixed scenario (every outcome the model can
// meet: output, exit codes, signals, timeouts, background tasks, notices,
// limits, bad input, cut output and its spill file, input to a task and
// a terminal) and compares each text
// the model reads with the golden txtar file golden, which every executor
// shares: toolbash/toolbashtest/testdata/transcript.txtar. With update it
// rewrites the file instead.
//
// Only what must vary is normalized: the default working directory reads
// $WORK and a spill file's path $SPILL. A later call names them so too.
//
// The executor is made, closed and checked as bashtest.Run makes, closes
// and checks each of its own (bashtest.NewExecutor).
func Transcript(t *testing.T, newExec bashtest.NewFunc, golden string, update bool) {
	e, c := bashtest.NewExecutor(t, newExec, func(c *bashtest.Config) {
		c.MaxOutputBytes, c.MaxTasksPerOwner, c.MaxTasks = 120, 2, 3
	})
	x := newTranscript(t, e, c.Cwd)
	defer x.tb.Close()
	var sections []txtar.File
	for i, st := range scenario {
		text := x.do(st)
		sections = append(sections, txtar.File{Name: fmt.Sprintf("%02d %s", i+1, st.name), Data: []byte(text)})
		if st.then != nil {
			st.then(x)
		}
	}
	if update {
		writeGolden(t, golden, sections)
		return
	}
	compareGolden(t, golden, sections)
}

// step is one call of the scenario: a tool call of session (s1 when
// empty), or, for tool "notices", the session's waiting notices. then, if
// set, runs after it, unrecorded.
type step struct {
	name, session, tool, args string
	then                      func(*transcript)
}

// The scenario. In args, $WORK and $SPILL stand for the executor's default
// working directory and the spill file the latest result named.
var scenario = []step{
	{name: "output", tool: toolbash.BashName, args: `{"command":"echo hello","description":"Say hello"}`},
	{name: "no output", tool: toolbash.BashName, args: `{"command":"true","description":"Do nothing"}`},
	{name: "exit code", tool: toolbash.BashName, args: `{"command":"echo x; exit 3","description":"Exit with 3"}`},
	{name: "stderr", tool: toolbash.BashName, args: `{"command":"echo out; echo err >&2","description":"Print to both streams"}`},
	{name: "invalid UTF-8", tool: toolbash.BashName, args: `{"command":"printf 'caf\\xc3\\xa9 \\xff\\n'","description":"Print a bad byte"}`},
	{name: "death by signal", tool: toolbash.BashName, args: `{"command":"echo bye; kill -KILL $$","description":"Kill the shell"}`},
	{name: "timeout", tool: toolbash.BashName, args: `{"command":"echo start; sleep 30","description":"Sleep past the timeout","timeoutMs":1000}`},
	{name: "timeout with TERM trapped, exit 0", tool: toolbash.BashName, args: `{"command":"trap 'echo bye; exit 0' TERM; echo ready; sleep 30 & wait","description":"Trap the timeout","timeoutMs":1000}`},
	{name: "timeout with TERM ignored", tool: toolbash.BashName, args: `{"command":"trap '' TERM; sleep 30","description":"Ignore the timeout","timeoutMs":1000}`},
	{name: "relative workdir", tool: toolbash.BashName, args: `{"command":"pwd","description":"Print the directory","workdir":"sub"}`},
	{name: "missing workdir", tool: toolbash.BashName, args: `{"command":"pwd","description":"Print the directory","workdir":"missing"}`},
	{name: "workdir that is a file", tool: toolbash.BashName, args: `{"command":"pwd","description":"Print the directory","workdir":"file.txt"}`},
	{name: "NUL in the command", tool: toolbash.BashName, args: `{"command":"echo a\u0000b","description":"Print a NUL"}`},
	{name: "empty command", tool: toolbash.BashName, args: `{"command":"  ","description":"Run nothing"}`},
	{name: "background start", tool: toolbash.BashName, args: `{"command":"read < '$WORK/gate'; echo one; echo two >&2; exit 4","description":"Wait, then print","run_in_background":true}`},
	{name: "background read while it waits", tool: toolbash.OutputName, args: `{"task_id":"bash-1"}`, then: releaseGate},
	{name: "notice of its end", tool: "notices"},
	{name: "background read after its end", tool: toolbash.OutputName, args: `{"task_id":"bash-1"}`},
	{name: "background read again", tool: toolbash.OutputName, args: `{"task_id":"bash-1"}`},
	{name: "kill of a finished task", tool: toolbash.KillName, args: `{"task_id":"bash-1"}`},
	{name: "background sleep", tool: toolbash.BashName, args: `{"command":"sleep 30","description":"Sleep","run_in_background":true}`},
	{name: "another session reads it", session: "s2", tool: toolbash.OutputName, args: `{"task_id":"bash-2"}`},
	{name: "kill of a running task", tool: toolbash.KillName, args: `{"task_id":"bash-2"}`},
	{name: "read of the killed task", tool: toolbash.OutputName, args: `{"task_id":"bash-2"}`},
	{name: "read of an unknown task", tool: toolbash.OutputName, args: `{"task_id":"bash-99"}`},
	{name: "kill of an unknown task", tool: toolbash.KillName, args: `{"task_id":"bash-99"}`},
	{name: "first task of s1", tool: toolbash.BashName, args: `{"command":"sleep 30","description":"Sleep","run_in_background":true}`},
	{name: "second task of s1", tool: toolbash.BashName, args: `{"command":"sleep 30","description":"Sleep","run_in_background":true}`},
	{name: "third task of s1: over its limit", tool: toolbash.BashName, args: `{"command":"sleep 30","description":"Sleep","run_in_background":true}`},
	{name: "a task of s2", session: "s2", tool: toolbash.BashName, args: `{"command":"sleep 30","description":"Sleep","run_in_background":true}`},
	{name: "a task of s3: over the executor's limit", session: "s3", tool: toolbash.BashName, args: `{"command":"sleep 30","description":"Sleep","run_in_background":true}`},
	{name: "s1 kills its first", tool: toolbash.KillName, args: `{"task_id":"bash-3"}`},
	{name: "s1 kills its second", tool: toolbash.KillName, args: `{"task_id":"bash-4"}`},
	{name: "s2 kills its task", session: "s2", tool: toolbash.KillName, args: `{"task_id":"bash-5"}`},
	{name: "leftovers adopted", tool: toolbash.BashName, args: `{"command":"sleep 30 & echo started","description":"Leave a process running"}`},
	{name: "kill of the adopted task", tool: toolbash.KillName, args: `{"task_id":"bash-6"}`},
	{name: "s1 at its limit again", tool: toolbash.BashName, args: `{"command":"sleep 30","description":"Sleep","run_in_background":true}`},
	{name: "s1 at its limit, twice", tool: toolbash.BashName, args: `{"command":"sleep 30","description":"Sleep","run_in_background":true}`},
	{name: "leftovers killed at the limit", tool: toolbash.BashName, args: `{"command":"sleep 30 & echo started","description":"Leave a process running"}`},
	{name: "s1 frees one", tool: toolbash.KillName, args: `{"task_id":"bash-7"}`},
	{name: "s1 frees the other", tool: toolbash.KillName, args: `{"task_id":"bash-8"}`},
	{name: "output cut to its tail", tool: toolbash.BashName, args: `{"command":"seq 1000","description":"Print many lines"}`},
	{name: "the spill file holds it all", tool: toolbash.BashName, args: `{"command":"wc -c < '$SPILL'; head -n 2 '$SPILL'; tail -n 1 '$SPILL'","description":"Look at the spill file"}`},
	{name: "background output past memory", tool: toolbash.BashName, args: `{"command":"seq 1000 >&2","description":"Print many lines","run_in_background":true}`, then: awaitNotice},
	{name: "notice of the flood's end", tool: "notices"},
	{name: "lossy read", tool: toolbash.OutputName, args: `{"task_id":"bash-9"}`},
	{name: "its spill file holds it all", tool: toolbash.BashName, args: `{"command":"wc -c < '$SPILL'; tail -n 1 '$SPILL'","description":"Look at the spill file"}`},
	{name: "no notice left", tool: "notices"},
	{name: "a loop reading its input", tool: toolbash.BashName, args: `{"command":"while IFS= read -r l; do echo \"=$l\"; done; echo done","description":"Echo lines","input":true}`},
	{name: "a line to it", tool: toolbash.InputName, args: `{"task_id":"bash-10","input":"one\n"}`},
	{name: "another session writes to it", session: "s2", tool: toolbash.InputName, args: `{"task_id":"bash-10","input":"two\n"}`},
	{name: "eof ends it", tool: toolbash.InputName, args: `{"task_id":"bash-10","input":"","eof":true}`},
	{name: "input to the ended task", tool: toolbash.InputName, args: `{"task_id":"bash-10","input":"three\n"}`},
	{name: "input to a task started without", tool: toolbash.InputName, args: `{"task_id":"bash-9","input":"x\n"}`},
	{name: "a prompt in a terminal", tool: toolbash.BashName, args: `{"command":"printf '\\033[1mbold\\033[0m\\n'; read -r -p 'name? ' n; echo \"hi $n\"","description":"Ask a name","tty":true}`},
	{name: "the prompt", tool: toolbash.InputName, args: `{"task_id":"bash-11","input":""}`},
	{name: "the answer, without its echo", tool: toolbash.InputName, args: `{"task_id":"bash-11","input":"ann\n"}`},
	{name: "no notice of the ends read", tool: "notices"},
}

// releaseGate lets the task that waits on $WORK/gate go on, and waits for
// the notice of its end.
func releaseGate(x *transcript) {
	testwait.WriteFIFO(x.t, filepath.Join(x.cwd, "gate"), "", "the task that waits on $WORK/gate")
	awaitNotice(x)
}

// awaitNotice waits until a notice is queued: a task has ended.
func awaitNotice(x *transcript) {
	testwait.Recv(x.t, x.noticed, "the notice of a task's end")
}

// transcript is the state of one run of the scenario.
type transcript struct {
	t       *testing.T
	cwd     string // the executor's default working directory
	tb      *toolbash.Tools
	reg     tools.Registry
	noticed chan struct{}
	spill   string // the spill file the latest result named
}

func newTranscript(t *testing.T, e bash.Executor, cwd string) *transcript {
	if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(cwd, "gate"), 0o600); err != nil {
		t.Fatal(err)
	}
	x := &transcript{t: t, cwd: cwd, noticed: make(chan struct{}, 100)}
	x.tb = toolbash.New(e, &toolbash.Options{Notify: func(string, string) { x.noticed <- struct{}{} }})
	if err := x.tb.Register(&x.reg); err != nil {
		t.Fatal(err)
	}
	return x
}

// do makes the step's call and returns its record: the call, then the
// text the model reads, normalized.
func (x *transcript) do(st step) string {
	id := st.session
	if id == "" {
		id = "s1"
	}
	if st.tool == "notices" {
		text := "(none)"
		if n := x.tb.TakeNotices(id, 0); len(n) > 0 {
			text = strings.Join(n, "\n\n")
		}
		return fmt.Sprintf("%s: waiting notices\n=> notices\n%s\n", id, text)
	}
	args := strings.ReplaceAll(st.args, "$WORK", jsonText(x.cwd))
	args = strings.ReplaceAll(args, "$SPILL", jsonText(x.spill))
	ctx, cancel := context.WithTimeout(context.Background(), 3*testwait.Limit)
	defer cancel()
	res := x.reg.Execute(ctx, &tools.Call{Tool: st.tool, Args: json.RawMessage(args),
		Session: session.Session{ID: id, Cwd: x.cwd}})
	kind := "result"
	if res.IsError {
		kind = "error"
	}
	return fmt.Sprintf("%s: %s %s\n=> %s\n%s\n", id, st.tool, st.args, kind, x.normalize(res.Text()))
}

// spillNote finds the paths a truncation note names.
var spillNote = regexp.MustCompile(`full output: ([^\]]+)\]`)

// normalize replaces what varies between runs and executors: spill paths
// (remembered for the next call) and the working directory.
func (x *transcript) normalize(text string) string {
	text = spillNote.ReplaceAllStringFunc(text, func(note string) string {
		paths := strings.Split(spillNote.FindStringSubmatch(note)[1], ", ")
		for i, p := range paths {
			if p != "(unavailable)" {
				x.spill, paths[i] = p, "$SPILL"
			}
		}
		return "full output: " + strings.Join(paths, ", ") + "]"
	})
	return strings.ReplaceAll(text, x.cwd, "$WORK")
}

// jsonText is s as it reads inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

const goldenComment = `The model-facing texts of the bash tools over any bash.Executor, made by
bashtest.Transcript; every executor must produce exactly these. Each section
is one call: the session, the tool and its arguments, then "=> result" or
"=> error" and the text the model reads, plus one newline. $WORK is the
executor's default working directory, $SPILL the spill file a result names.
Regenerate with go test -update in a package that calls Transcript.
`

func writeGolden(t *testing.T, path string, sections []txtar.File) {
	ar := &txtar.Archive{Comment: []byte(goldenComment), Files: sections}
	if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

func compareGolden(t *testing.T, path string, sections []txtar.File) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	want := map[string]string{}
	for _, f := range ar.Files {
		want[f.Name] = string(f.Data)
	}
	for _, f := range sections {
		w, ok := want[f.Name]
		switch {
		case !ok:
			t.Errorf("%s: not in %s (run the test with -update)", f.Name, path)
		case string(f.Data) != w:
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", f.Name, f.Data, w)
		}
	}
	if len(ar.Files) != len(sections) {
		t.Errorf("%s holds %d calls, the scenario makes %d (run the test with -update)", path, len(ar.Files), len(sections))
	}
}
