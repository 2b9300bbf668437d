//go:build linux

package bashtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) outputTests(t *testing.T) {
	parallel(t, "OnOutput pieces are whole, serial, before Run returns", s.onOutput)
	parallel(t, "run output past MaxOutputBytes keeps its tail and spills", s.runSpill)
	parallel(t, "SpillAfter asks for a spill file sooner", s.spillAfter)
	parallel(t, "task read past MaxOutputBytes is lossy and spills", s.readSpill)
	t.Run("invalid UTF-8 reads as U+FFFD, spill keeps raw bytes", s.invalidUTF8)
	parallel(t, "a cut never splits a character", s.cutChars)
	parallel(t, "a read never splits a character", s.readChars)
}

// observer records OnOutput calls and what is wrong with them.
type observer struct {
	mu       sync.Mutex
	text     map[bash.Stream]*strings.Builder
	problems []string
	inCall   atomic.Int32
	returned atomic.Bool // Run has returned
}

func newObserver() *observer {
	return &observer{text: map[bash.Stream]*strings.Builder{bash.Stdout: {}, bash.Stderr: {}}}
}

func (o *observer) onOutput(stream bash.Stream, text []byte) {
	if o.inCall.Add(1) != 1 {
		o.problem("two calls at once")
	}
	defer o.inCall.Add(-1)
	if o.returned.Load() {
		o.problem("a call after Run returned")
	}
	if !utf8.Valid(text) {
		o.problem("a piece that is not valid UTF-8: " + string(text))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	b, ok := o.text[stream]
	if !ok {
		o.problems = append(o.problems, "a piece of unknown stream "+string(stream))
		return
	}
	b.Write(text) // a copy: text is only valid during the call
}

func (o *observer) problem(p string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.problems = append(o.problems, p)
}

// check reports the problems, and whether the pieces add up to the result
// (an executor that cannot stream may make no call at all).
func (o *observer) check(t *testing.T, res bash.RunResult) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.problems {
		t.Errorf("OnOutput: %s", p)
	}
	out, errs := o.text[bash.Stdout].String(), o.text[bash.Stderr].String()
	if out == "" && errs == "" {
		t.Logf("OnOutput was never called (allowed for an executor that cannot stream)")
		return
	}
	if out != res.Stdout.Text || errs != res.Stderr.Text {
		t.Errorf("OnOutput pieces add up to stdout %q, stderr %q; the result says %q, %q",
			out, errs, res.Stdout.Text, res.Stderr.Text)
	}
}

// onOutput runs its commands one after another on one executor of its
// own, and checks each one's pieces once Close has returned: whatever was
// still to come (a leftover's output, a late call) has come by then.
func (s *suite) onOutput(t *testing.T) {
	h := s.harness(t, nil)
	cases := []struct{ name, cmd string }{
		{"interleaved", `for i in $(seq 200); do echo "é$i"; echo "€$i" >&2; done`},
		{"characters split", `printf 'a\xe2\x82'; sleep 0.1; printf '\xac\n'; printf '\xf0\x9f' >&2; sleep 0.1; printf '\x98\x80\n' >&2`},
		{"invalid bytes", `printf 'x\xffy\n'; printf '\xc3(\n' >&2`},
		{"leftovers not watched", `echo before; (sleep 0.3; echo after) &`},
	}
	observers := make([]*observer, len(cases))
	results := make([]bash.RunResult, len(cases))
	for i, tc := range cases {
		o := newObserver()
		spec := h.resolve(bash.ExecRequest{Command: tc.cmd})
		spec.OnOutput = o.onOutput
		res, err := h.e.Run(h.ctx(), spec)
		o.returned.Store(true)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: Run(%q): %+v, %v", tc.name, tc.cmd, res, err)
		}
		observers[i], results[i] = o, res
	}
	h.close()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { observers[i].check(t, results[i]) })
	}
}

func (s *suite) runSpill(t *testing.T) {
	h := s.shared(t, s.spilling) // MaxOutputBytes 1000
	want := lines(1, 1000)
	res := h.runCmd("seq 1000; seq 1000 >&2")
	for _, o := range []struct {
		name string
		out  bash.Output
	}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if !o.out.Truncated || o.out.Text == "" || len(o.out.Text) > 1000 || !strings.HasSuffix(want, o.out.Text) {
			t.Errorf("%s: %d bytes, Truncated %v; want the stream's tail of at most 1000 bytes, Truncated",
				o.name, len(o.out.Text), o.out.Truncated)
		}
		if o.out.Bytes != int64(len(want)) {
			t.Errorf("%s: Bytes %d; want the whole stream's, %d", o.name, o.out.Bytes, len(want))
		}
		if !filepath.IsAbs(o.out.SpillPath) {
			t.Errorf("%s: SpillPath %q is not an absolute path", o.name, o.out.SpillPath)
			continue
		}
		h.checkSpill(o.name, o.out.SpillPath, want)
	}
}

func (s *suite) spillAfter(t *testing.T) {
	h := s.shared(t, s.common) // MaxOutputBytes 4096
	for _, tc := range []struct {
		lines      int // the command is seq LINES
		spillAfter int64
		spill      bool
	}{
		{100, 100, true}, // 292 bytes
		{10, 100, false}, // 21 bytes
		{100, 0, false},
	} {
		spec := h.resolve(bash.ExecRequest{Command: fmt.Sprint("seq ", tc.lines)})
		spec.SpillAfter = tc.spillAfter
		res, err := h.e.Run(h.ctx(), spec)
		if err != nil || res.Stdout.Truncated || res.Stdout.Text != lines(1, tc.lines) {
			t.Fatalf("Run(%q) with SpillAfter %d: %+v, %v; want it all, not truncated", spec.Command, tc.spillAfter, res, err)
		}
		if got := res.Stdout.SpillPath != ""; got != tc.spill {
			t.Errorf("Run(%q) with SpillAfter %d: SpillPath %q; want one: %v", spec.Command, tc.spillAfter, res.Stdout.SpillPath, tc.spill)
		}
		if tc.spill {
			h.checkSpill(spec.Command, res.Stdout.SpillPath, res.Stdout.Text)
		}
	}
	l := h.listen()
	spec := h.resolve(bash.ExecRequest{Command: "seq 100 >&2"})
	spec.SpillAfter = 100
	task, err := h.e.Start(h.ctx(), spec)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(l, task.ID)
	r := h.read(task.ID)
	if r.Stderr.Text != lines(1, 100) || r.Lossy() {
		t.Errorf("read of a task with SpillAfter: %+v; want it all", r)
	}
	h.checkSpill("task stderr", r.Stderr.SpillPath, lines(1, 100))
}

func (s *suite) readSpill(t *testing.T) {
	h := s.shared(t, s.spilling) // MaxOutputBytes 1000
	l := h.listen()
	gate := h.fifo("gate")
	task := h.start("echo first; read < "+quote(gate)+"; seq 2000", "")
	first, _ := h.readUntil(task.ID, func(out, _ string) bool { return out != "" })
	if first != "first\n" {
		t.Fatalf("first reads: %q; want %q", first, "first\n")
	}
	h.release(gate)
	h.wait(l, task.ID)
	want := lines(1, 2000)
	r := h.read(task.ID)
	if !r.Stdout.Truncated || !r.Lossy() || r.Stdout.Text == "" || len(r.Stdout.Text) > 1000 ||
		!strings.HasSuffix(want, r.Stdout.Text) || !r.Task.Done() {
		t.Errorf("read after the end: %d bytes, Truncated %v, task %+v; want the tail, at most 1000 bytes, lossy",
			len(r.Stdout.Text), r.Stdout.Truncated, r.Task)
	}
	if r.Stdout.Bytes != int64(len("first\n"+want)) {
		t.Errorf("read after the end: Bytes %d; want the whole stream's, %d", r.Stdout.Bytes, len("first\n"+want))
	}
	h.checkSpill("stdout", r.Stdout.SpillPath, "first\n"+want)
	if again := h.read(task.ID); again.Stdout.Text != "" || again.Stderr.Text != "" || again.Lossy() {
		t.Errorf("read after the final read: %+v; want nothing new, nothing lost", again)
	}
}

func (s *suite) invalidUTF8(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	cmd, want := `printf 'a\xffb\xc3(c\n'`, "a\uFFFDb\uFFFD(c\n"
	if res := h.runCmd(cmd); res.Stdout.Text != want {
		t.Errorf("Run: %q; want %q", res.Stdout.Text, want)
	}
	task := h.start(cmd+" >&2", "")
	h.wait(l, task.ID)
	if r := h.read(task.ID); r.Stderr.Text != want {
		t.Errorf("ReadOutput: %q; want %q", r.Stderr.Text, want)
	}
	raw := "A\xffB\xfeC0123456789\n"
	spec := h.resolve(bash.ExecRequest{Command: `printf 'A\xffB\xfeC0123456789\n'`})
	spec.SpillAfter = 8
	res, err := h.e.Run(h.ctx(), spec)
	if err != nil || res.Stdout.Text != "A\uFFFDB\uFFFDC0123456789\n" {
		t.Fatalf("Run with SpillAfter: %+v, %v", res, err)
	}
	h.checkSpill("raw bytes", res.Stdout.SpillPath, raw)
}

// onlyOf checks that text is a non-empty run of whole repeats of unit that
// fits max bytes.
func onlyOf(t *testing.T, what, text, unit string, max int) {
	t.Helper()
	if text == "" || len(text) > max || strings.ReplaceAll(text, unit, "") != "" {
		t.Errorf("%s: %q; want whole %q characters, at most %d bytes", what, text, unit, max)
	}
}

func (s *suite) cutChars(t *testing.T) {
	h := s.shared(t, s.spilling) // MaxOutputBytes 1000
	l := h.listen()
	cmd := `printf x; for i in $(seq 500); do printf '€'; done; printf y >&2; for i in $(seq 300); do printf '😀€' >&2; done`
	res := h.runCmd(cmd)
	onlyOf(t, "run stdout", res.Stdout.Text, "€", 1000)
	onlyOf(t, "run stderr", strings.TrimPrefix(res.Stderr.Text, "€"), "😀€", 1000)
	task := h.start(cmd, "")
	h.wait(l, task.ID)
	r := h.read(task.ID)
	onlyOf(t, "read stdout", r.Stdout.Text, "€", 1000)
	onlyOf(t, "read stderr", strings.TrimPrefix(r.Stderr.Text, "€"), "😀€", 1000)
}

func (s *suite) readChars(t *testing.T) {
	h := s.shared(t, s.common)
	l := h.listen()
	gate := h.fifo("gate")
	task := h.start(`printf 'a\xe2\x82'; read < `+quote(gate)+`; printf '\xac b\n'`, "")
	first, _ := h.readUntil(task.ID, func(out, _ string) bool { return out != "" })
	if first != "a" {
		t.Errorf("reads before the character was complete: %q; want %q", first, "a")
	}
	h.release(gate)
	h.wait(l, task.ID)
	if all := first + h.read(task.ID).Stdout.Text; all != "a€ b\n" {
		t.Errorf("all reads: %q; want %q", all, "a€ b\n")
	}
}
