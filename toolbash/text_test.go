package toolbash

import (
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
		{"memory-limit", bash.RunResult{Stdout: out("x\n"), ExitCode: -1, Signal: "SIGKILL", Limit: "memory limit 2 GiB"}},
		{"memory-limit-child", bash.RunResult{ExitCode: 137, Limit: "memory limit 64 MiB"}},
		{"sandbox-note", bash.RunResult{Stderr: out("fatal: could not set 'core.repositoryformatversion' to '0'\n"), ExitCode: 128,
			Note: "/w/.git is no longer a git repository, and git init cannot make it one in the sandbox: ask the user"}},
		{"truncated-with-path", bash.RunResult{Stdout: bash.Output{Text: "99\n100\n", Truncated: true, SpillPath: spill}}},
		{"truncated-unavailable", bash.RunResult{Stdout: bash.Output{Text: "99\n100", Truncated: true}}},
		{"truncated-stderr", bash.RunResult{Stdout: out("ok\n"), Stderr: bash.Output{Text: "r 8\ne9\n", Truncated: true, SpillPath: "/tmp/dsh-spill-1/stderr-cd34.log"}, ExitCode: 1}},
		{"adopted", bash.RunResult{Stdout: out("started\n"), Adopted: "bash-4"}},
		{"adopted-exit-code", bash.RunResult{Stdout: out("hi"), ExitCode: 2, Adopted: "bash-5"}},
		{"leftovers-killed", bash.RunResult{Stdout: out("hi\n"), LeftoversKilled: true}},
		{"leftovers-outside", bash.RunResult{Stdout: out("hi\n"), ExitCode: 3, LeftoversKilled: true, LeftoversOutside: true}},
		{"refused", bash.RunResult{Stdout: out("after\n"), Stderr: out("bash: line 1: 12 Killed                  git push --force\n"),
			ExitCode: 137, Refused: []bash.Refusal{
				{Program: "/usr/bin/git", Argv: []string{"git", "-c", "a=b", "push", "--force"}, Rule: "git push --force"},
				{Program: "/w/odd\nname", Argv: []string{"./odd\nname", "it's"}, Rule: "odd*"},
			}}},
		{"refused-more", bash.RunResult{ExitCode: 137, RefusedMore: 12,
			Refused: []bash.Refusal{{Program: "/usr/bin/rm", Argv: []string{"rm", "-rf", strings.Repeat("d/", 150)}, Rule: "rm -rf"}}}},
	}
	got := map[string]string{}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
		got[c.name] = runText(c.r, DefaultMaxResultChars)
	}
	for _, c := range budgetCases() {
		names = append(names, c.name)
		got[c.name] = runText(c.r, c.max)
	}
	golden(t, "run.txtar", names, got)
}

func TestTaskTextsGolden(t *testing.T) {
	running := bash.Task{ID: "bash-3", Status: bash.StatusRunning}
	completed := bash.Task{ID: "bash-3", Status: bash.StatusCompleted, ExitCode: 0}
	failedExit := bash.Task{ID: "bash-3", Status: bash.StatusCompleted, ExitCode: 7}
	killed := bash.Task{ID: "bash-3", Status: bash.StatusKilled}
	killedSig := bash.Task{ID: "bash-3", Status: bash.StatusKilled, ExitCode: -1, Signal: "SIGTERM"}
	failed := bash.Task{ID: "bash-3", Status: bash.StatusFailed, ExitCode: -1, Err: &bash.WorkdirError{Path: "/x", Err: fs.ErrNotExist}}
	p1, p2 := "/tmp/dsh-spill-1/stdout-1.log", "/tmp/dsh-spill-1/stderr-2.log"
	cases := []struct {
		name string
		text string
	}{
		{"start", startText(running)},
		{"read-new-output", readText(bash.TaskRead{Task: running, Stdout: out("line 1\nline 2\n")}, DefaultMaxResultChars)},
		{"read-no-new-output", readText(bash.TaskRead{Task: running}, DefaultMaxResultChars)},
		{"read-stderr", readText(bash.TaskRead{Task: running, Stdout: out("out"), Stderr: out("err\n")}, DefaultMaxResultChars)},
		{"read-stderr-only", readText(bash.TaskRead{Task: running, Stderr: out("err\n")}, DefaultMaxResultChars)},
		{"read-lossy-paths", readText(bash.TaskRead{Task: running, Stdout: bash.Output{Text: "ut 9\nout 10\n", Truncated: true, SpillPath: p1}, Stderr: bash.Output{Text: "rr 9\nerr 10\n", Truncated: true, SpillPath: p2}}, DefaultMaxResultChars)},
		{"read-lossy-one-path", readText(bash.TaskRead{Task: running, Stdout: bash.Output{Text: "ut 9\nout 10\n", Truncated: true, SpillPath: p1}}, DefaultMaxResultChars)},
		{"read-lossy-unavailable", readText(bash.TaskRead{Task: running, Stdout: bash.Output{Text: "tail", Truncated: true}}, DefaultMaxResultChars)},
		{"read-completed", readText(bash.TaskRead{Task: completed, Stdout: out("done\n")}, DefaultMaxResultChars)},
		{"read-completed-exit-code", readText(bash.TaskRead{Task: failedExit}, DefaultMaxResultChars)},
		{"read-killed", readText(bash.TaskRead{Task: killed}, DefaultMaxResultChars)},
		{"read-killed-by-signal", readText(bash.TaskRead{Task: killedSig, Stdout: out("partial")}, DefaultMaxResultChars)},
		{"read-failed", readText(bash.TaskRead{Task: failed}, DefaultMaxResultChars)},
		{"read-completed-after-limit", readText(bash.TaskRead{Task: bash.Task{ID: "bash-3", Status: bash.StatusCompleted, ExitCode: 137, Limit: "memory limit 64 MiB"}}, DefaultMaxResultChars)},
		{"read-completed-refused", readText(bash.TaskRead{Task: failedExit, RefusedMore: 1,
			Refused: []bash.Refusal{{Program: "/usr/bin/curl", Argv: []string{"curl", "https://x.example"}, Rule: "curl *"}}}, DefaultMaxResultChars)},
		{"read-killed-by-limit", readText(bash.TaskRead{Task: bash.Task{ID: "bash-3", Status: bash.StatusKilled, ExitCode: -1, Signal: "SIGKILL", Limit: "memory limit 2 GiB"}}, DefaultMaxResultChars)},
		{"kill-killed", killText("bash-3", true)},
		{"kill-finished", killText("bash-3", false)},
		{"notice-completed", noticeText(completed)},
		{"notice-killed", noticeText(killedSig)},
		{"foreign-task", foreignTaskText("bash-3")},
	}
	long := bash.Output{Text: lines("o", 1, 40), Truncated: true, SpillPath: p1}
	cases = append(cases,
		struct{ name, text string }{"read-budget-lossy", readText(bash.TaskRead{Task: running, Stdout: long, Stderr: out(lines("e", 1, 3))}, 200)},
		struct{ name, text string }{"read-budget-cut", readText(bash.TaskRead{Task: completed, Stdout: bash.Output{Text: lines("o", 1, 40), SpillPath: p1}}, 150)},
		struct{ name, text string }{"notices", taskNoticesText([]string{noticeText(completed), noticeText(killedSig)})},
		// As MCP sets it apart, in a block of its own after the result's.
		struct{ name, text string }{"notice-block", "\n\n" + taskNoticesText([]string{noticeText(completed)})},
	)
	got := map[string]string{}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
		got[c.name] = c.text
	}
	golden(t, "tasks.txtar", names, got)
}

// lines is "prefixN\n" for N from first to last.
func lines(prefix string, first, last int) string {
	var b strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

type budgetCase struct {
	name string
	r    bash.RunResult
	max  int
}

// budgetCases show the result budget at work, with budgets small enough to
// read.
func budgetCases() []budgetCase {
	spill, espill := "/tmp/dsh-spill-1/o/stdout-ab12.log", "/tmp/dsh-spill-1/o/stderr-cd34.log"
	seqTail := bash.Output{Text: "0858\n190859\n190860\n", Truncated: true, SpillPath: spill}
	return []budgetCase{
		{"cut-tail-starts-at-line", bash.RunResult{Stdout: seqTail}, DefaultMaxResultChars},
		{"cut-tail-long-line-kept", bash.RunResult{Stdout: bash.Output{Text: strings.Repeat("x", lineWindow+5) + "\nend\n", Truncated: true, SpillPath: spill}}, DefaultMaxResultChars},
		{"budget-stdout-only", bash.RunResult{Stdout: bash.Output{Text: lines("line ", 1, 60), SpillPath: spill}, ExitCode: 1}, 300},
		{"budget-stdout-flood-keeps-stderr", bash.RunResult{Stdout: bash.Output{Text: lines("out ", 1, 500), Truncated: true, SpillPath: spill}, Stderr: out(lines("error ", 1, 5))}, 300},
		{"budget-both-halves", bash.RunResult{Stdout: bash.Output{Text: lines("out ", 1, 100), SpillPath: spill}, Stderr: bash.Output{Text: lines("err ", 1, 100), SpillPath: espill}}, 400},
		{"budget-fits-whole", bash.RunResult{Stdout: out(lines("line", 1, 30)), ExitCode: 2}, utf8.RuneCountInString(lines("line", 1, 30) + "[exit code: 2]")},
		{"budget-cut-unavailable", bash.RunResult{Stdout: out(lines("line ", 1, 60))}, 200},
		{"budget-multibyte", bash.RunResult{Stdout: bash.Output{Text: strings.Repeat("é€😀\n", 100), SpillPath: spill}}, 150},
		{"budget-markers-only", bash.RunResult{Stdout: bash.Output{Text: lines("x", 1, 10), SpillPath: spill}, TimedOut: true, Timeout: time.Second, ExitCode: -1, Signal: "SIGTERM"}, 10},
	}
}

// TestBudgetHolds checks the budget's rules on many random results: the
// text fits, every marker and path survives, each stream keeps at least
// its fair share (half of the room, less one partial line), and a cut
// stream is always noted.
func TestBudgetHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		var b strings.Builder
		n := rng.IntN(3000)
		if rng.IntN(3) == 0 { // one long line: cuts fill the share exactly
			return strings.Repeat("z", n)
		}
		for b.Len() < n {
			b.WriteString(strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(120)))
			if rng.IntN(4) > 0 {
				b.WriteString("\n")
			}
			if rng.IntN(8) == 0 {
				b.WriteString("é😀")
			}
		}
		return b.String()
	}
	for i := range 2000 {
		max := 300 + rng.IntN(3000)
		r := bash.RunResult{
			Stdout:   bash.Output{Text: gen(), Truncated: rng.IntN(2) == 0, SpillPath: "/tmp/s/out.log"},
			Stderr:   bash.Output{Text: gen(), SpillPath: "/tmp/s/err.log"},
			ExitCode: rng.IntN(3),
			TimedOut: rng.IntN(2) == 0, Timeout: time.Second,
		}
		text := runText(r, max)
		if n := utf8.RuneCountInString(text); n > max {
			t.Fatalf("case %d: %d characters over a budget of %d:\n%s", i, n, max, text)
		}
		bare := runText(bash.RunResult{ExitCode: r.ExitCode, TimedOut: r.TimedOut, Timeout: r.Timeout}, 0)
		markers := strings.TrimPrefix(bare, noOutput)
		if !strings.HasSuffix(text, markers) {
			t.Fatalf("case %d: markers %q lost:\n%s", i, markers, text)
		}
		o, e := fitStreams(r.Stdout, r.Stderr, max-fixedChars(runTextWhole(stripped(r))))
		for _, c := range []struct{ in, got bash.Output }{{r.Stdout, o}, {r.Stderr, e}} {
			if c.got.Text != c.in.Text && !c.got.Truncated {
				t.Fatalf("case %d: a cut stream is not noted", i)
			}
			if !strings.HasSuffix(c.in.Text, c.got.Text) {
				t.Fatalf("case %d: the kept text is not the stream's tail", i)
			}
			room := (max - fixedChars(runTextWhole(stripped(r)))) / 2
			if n, in := utf8.RuneCountInString(c.got.Text), utf8.RuneCountInString(c.in.Text); n < min(in, room)-lineWindow {
				t.Fatalf("case %d: a stream of %d characters kept %d, under half the room (%d)", i, in, n, room)
			}
		}
	}
}

func stripped(r bash.RunResult) bash.RunResult {
	stripStreams(&r.Stdout, &r.Stderr)
	return r
}

// TestErrorTextsGolden: the words the model reads for each typed error of
// package bash.
func TestErrorTextsGolden(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"command-empty", &bash.CommandError{Problem: bash.ErrEmptyCommand}},
		{"command-nul", &bash.CommandError{Problem: bash.ErrNULInCommand, Offset: 4}},
		{"timeout", &bash.TimeoutError{Timeout: -5 * time.Millisecond}},
		{"workdir-missing", &bash.WorkdirError{Path: "/w", Err: fs.ErrNotExist}},
		{"workdir-not-directory", &bash.WorkdirError{Path: "/w", Err: bash.ErrNotDirectory}},
		{"workdir-outside-sandbox", &bash.WorkdirError{Path: "/tmp/x", Err: bash.ErrOutsideSandbox}},
		{"workdir-permission", &bash.WorkdirError{Path: "/w", Err: fs.ErrPermission}},
		{"workspace-home", &bash.WorkspaceError{Path: "/", Holds: "/home/u", Problem: bash.ErrWorkspaceHome}},
		{"workspace-server", &bash.WorkspaceError{Path: "/tmp", Holds: "/tmp", Problem: bash.ErrWorkspaceServer}},
		{"limit-per-owner", &bash.TaskLimitError{Scope: bash.PerOwner, Limit: 16}},
		{"limit-per-executor", &bash.TaskLimitError{Scope: bash.PerExecutor, Limit: 64}},
		{"start", &bash.StartError{Task: "bash-3", Err: &bash.WorkdirError{Path: "/w", Err: fs.ErrNotExist}}},
		{"unknown-task", &bash.UnknownTaskError{ID: "bash-9"}},
		{"link-lost-task", &bash.LinkError{Host: "box", Task: "bash-3", Err: bash.ErrLinkLost}},
		{"link-in-flight", &bash.LinkError{Host: "box", InFlight: true, Err: bash.ErrLinkLost}},
		{"link-gone", &bash.LinkError{Host: "pod agents/dsh-1-x", Err: fmt.Errorf("%w: %w", bash.ErrLinkLost, bash.ErrGone)}},
		{"closed", bash.ErrClosed},
	}
	got := map[string]string{}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
		got[c.name] = errorText(c.err)
	}
	golden(t, "errors.txtar", names, got)
}

// TestSandboxTextGolden: what the model is told about its sandbox.
func TestSandboxTextGolden(t *testing.T) {
	cases := []struct {
		name  string
		facts SandboxFacts
	}{
		{"default", SandboxFacts{}},
		{"tmp-size", SandboxFacts{TmpSize: "4 GiB"}},
		{"landlock", SandboxFacts{Landlock: true}},
		{"network-off-locked", SandboxFacts{NetworkOff: true, LockCaches: true}},
		{"extra-paths", SandboxFacts{Writable: []string{"/data"}, ReadOnly: []string{"/w/.env"}}},
		{"allowlist-asks", SandboxFacts{Allowlist: []string{"proxy.golang.org", "*.github.com"}, AsksNetwork: true}},
		{"allowlist-empty", SandboxFacts{Allowlist: []string{}}},
		{"allowlist-forwarded", SandboxFacts{Allowlist: []string{"proxy.golang.org"}, Forwarded: []string{"127.0.0.1:5432", "localhost:8080", "[::1]:6379"}}},
		{"unsandboxed", SandboxFacts{Unsandboxed: true}},
	}
	got := map[string]string{}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
		got[c.name] = SandboxText(c.facts)
	}
	// The unsandboxed argument's description, which says what needs no
	// escape.
	for _, c := range []struct {
		name  string
		facts *SandboxFacts
	}{
		{"argument", nil},
		{"argument-default", &SandboxFacts{}},
		{"argument-landlock-locked-extra", &SandboxFacts{Landlock: true, LockCaches: true, Writable: []string{"/data", "/srv"}}},
		{"argument-network-off", &SandboxFacts{NetworkOff: true}},
		{"argument-allowlist-asks", &SandboxFacts{Allowlist: []string{"proxy.golang.org"}, AsksNetwork: true}},
		{"argument-allowlist", &SandboxFacts{Allowlist: []string{}}},
		{"argument-allowlist-forwarded", &SandboxFacts{Allowlist: []string{}, Forwarded: []string{"127.0.0.1:5432"}}},
	} {
		names = append(names, c.name)
		got[c.name] = describeUnsandboxed(c.facts)
	}
	golden(t, "sandbox.txtar", names, got)
}
