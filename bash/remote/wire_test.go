package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestErrorRoundTrip: every typed error of package bash crosses the wire
// as the same type with the same fields, so the tool layer writes the same
// words for the model.
func TestErrorRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error // nil: the same as err
	}{
		{"workdir missing", &bash.WorkdirError{Path: "/w", Err: fs.ErrNotExist}, nil},
		{"workdir not a directory", &bash.WorkdirError{Path: "/w", Err: bash.ErrNotDirectory}, nil},
		{"workdir outside the sandbox", &bash.WorkdirError{Path: "/tmp/x", Err: bash.ErrOutsideSandbox}, nil},
		{"workdir permission", &bash.WorkdirError{Path: "/w", Err: fs.ErrPermission}, nil},
		{"workdir other", &bash.WorkdirError{Path: "/w", Err: errors.New("too many links")}, nil},
		{"workspace home", &bash.WorkspaceError{Path: "/home", Holds: "/home/u", Problem: bash.ErrWorkspaceHome}, nil},
		{"workspace server", &bash.WorkspaceError{Path: "/tmp", Holds: "/tmp/dsh-jails-1", Problem: bash.ErrWorkspaceServer}, nil},
		{"empty command", &bash.CommandError{Problem: bash.ErrEmptyCommand}, nil},
		{"NUL", &bash.CommandError{Problem: bash.ErrNULInCommand, Offset: 7}, nil},
		{"timeout", &bash.TimeoutError{Timeout: -5 * time.Millisecond}, nil},
		{"limit per owner", &bash.TaskLimitError{Scope: bash.PerOwner, Limit: 16}, nil},
		{"limit per executor", &bash.TaskLimitError{Scope: bash.PerExecutor, Limit: 64}, nil},
		{"unknown task", &bash.UnknownTaskError{ID: "bash-9"}, nil},
		{"start", &bash.StartError{Task: "bash-3", Err: &bash.WorkdirError{Path: "/x", Err: fs.ErrNotExist}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := roundTrip(t, tt.err)
			want := tt.err
			if tt.want != nil {
				want = tt.want
			}
			if reflect.TypeOf(got) != reflect.TypeOf(want) || got.Error() != want.Error() {
				t.Errorf("got %T %q, want %T %q", got, got, want, want)
			}
		})
	}
	if got := roundTrip(t, bash.ErrUnknownTask); got != bash.ErrUnknownTask {
		t.Errorf("ErrUnknownTask came back as %v", got)
	}
	for _, sentinel := range []error{bash.ErrAborted, bash.ErrClosed} {
		if got := roundTrip(t, sentinel); !errors.Is(got, sentinel) || !strings.HasPrefix(got.Error(), "box: ") {
			t.Errorf("%v came back as %v", sentinel, got)
		}
	}
	other := roundTrip(t, errors.New("no shell"))
	if other.Error() != "box: no shell" {
		t.Errorf("an infrastructure error came back as %q, want it naming the host", other)
	}
}

// roundTrip encodes err, sends it through JSON and decodes it.
func roundTrip(t *testing.T, err error) error {
	t.Helper()
	var b bytes.Buffer
	s := &lineStream{w: &b}
	if werr := s.WriteObject(reply{Err: toWireError(err)}); werr != nil {
		t.Fatal(werr)
	}
	var r reply
	rs := newLineStream(nopCloser{&b}, 0)
	if rerr := rs.ReadObject(&r); rerr != nil {
		t.Fatal(rerr)
	}
	return r.Err.err("box")
}

type nopCloser struct{ io.ReadWriter }

func (nopCloser) Close() error { return nil }

// TestLineStreamBound: a message longer than the bound ends the stream
// with ErrMessageTooLarge instead of growing memory.
func TestLineStreamBound(t *testing.T) {
	long := `{"x":"` + strings.Repeat("a", 200<<10) + `"}` + "\n"
	s := newLineStream(nopCloser{bytes.NewBufferString(long + long)}, 100<<10)
	var v map[string]string
	if err := s.ReadObject(&v); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("a 200 KiB message under a 100 KiB bound: %v", err)
	}
	s = newLineStream(nopCloser{bytes.NewBufferString(long + `{"x":"b"}` + "\n")}, 1<<20)
	for _, want := range []int{200 << 10, 1} {
		if err := s.ReadObject(&v); err != nil || len(v["x"]) != want {
			t.Errorf("read %d bytes, %v; want %d", len(v["x"]), err, want)
		}
	}
}

// TestLiveOutputBounded: while the link is stuck, the server keeps at
// most MaxPendingOutput bytes of a run's live output, drops the oldest at
// character boundaries and counts them, and once the link moves sends the
// rest in order, each piece tagged with its stream.
func TestLiveOutputBounded(t *testing.T) {
	// An odd bound: a cut at the bound itself would split an é.
	const bound = 1001
	char := map[bash.Stream]string{bash.Stdout: "é", bash.Stderr: "€"} // the text of each stream
	f := &floodExec{flooded: make(chan struct{})}
	var full strings.Builder
	for i := range 10000 {
		// 100 bytes on stdout, 99 on stderr every 50th, then every other
		// in the tail that goes out: runs of stdout longer than the
		// bound, and both streams in what is kept.
		o := observed{bash.Stdout, strings.Repeat(char[bash.Stdout], 50)}
		if i%50 == 0 || i > 9990 && i%2 == 0 {
			o = observed{bash.Stderr, strings.Repeat(char[bash.Stderr], 33)}
		}
		f.adds = append(f.adds, o)
		full.WriteString(o.text)
	}
	notes := runStuck(t, f, &ServeOptions{MaxPendingOutput: bound, OutputEvery: -1})
	pos, skipped := 0, int64(0)
	for i, n := range notes {
		pos += int(n.Skipped)
		skipped += n.Skipped
		end := pos + len(n.Text)
		if n.Text == "" || len(n.Text) > bound || !utf8.ValidString(n.Text) || end > full.Len() || full.String()[pos:end] != n.Text ||
			strings.ReplaceAll(n.Text, char[n.Stream], "") != "" {
			t.Fatalf("note %d (%s, %d bytes after %d skipped) is not the output of %s from byte %d", i, n.Stream, len(n.Text), n.Skipped, n.Stream, pos)
		}
		pos = end
	}
	if pos != full.Len() || skipped == 0 {
		t.Errorf("the notes account for %d bytes of %d, %d of them skipped", pos, full.Len(), skipped)
	}
}

// observed is one call of an observer.
type observed struct {
	stream bash.Stream
	text   string
}

// floodExec is an executor whose Run calls the observer with each of adds,
// then closes flooded; it has no other method than those Serve calls.
type floodExec struct {
	bash.Executor // nil
	adds          []observed
	flooded       chan struct{}
}

func (f *floodExec) Run(_ context.Context, spec bash.ExecSpec) (bash.RunResult, error) {
	for _, a := range f.adds {
		spec.OnOutput(a.stream, []byte(a.text))
	}
	close(f.flooded)
	return bash.RunResult{}, nil
}

func (f *floodExec) OnTaskDone(func(bash.Task)) func() { return func() {} }
func (f *floodExec) Close() error                      { return nil }

// runStuck serves f over a link that nobody reads until f's Run has
// flooded it, runs a command with live output and returns the output
// notes sent before the reply.
func runStuck(t *testing.T, f *floodExec, opts *ServeOptions) []outputNote {
	t.Helper()
	cli, srv := net.Pipe() // unbuffered: stuck until read
	served := make(chan error, 1)
	go func() { served <- Serve(context.Background(), srv, f, opts) }()
	defer func() {
		cli.Close()
		if err, werr := testwait.Wait(served, "return of Serve once its client closed"); werr != nil || err != nil {
			t.Errorf("Serve: %v", errors.Join(werr, err))
		}
	}()
	// A reply that does not come fails the read with an i/o timeout, which
	// readUntilReply says was in the wait for which reply.
	cli.SetDeadline(time.Now().Add(testwait.Limit))
	s := newLineStream(cli, 0)
	call(t, s, 1, methodHello, helloParams{Version: Version})
	if _, err := readUntilReply(s, 1); err != nil {
		t.Fatal(err)
	}
	call(t, s, 2, methodRun, wireSpec{Command: "flood", Stream: true})
	testwait.Recv(t, f.flooded, "end of the flood of output")
	notes, err := readUntilReply(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	return notes
}

// call sends a request.
func call(t *testing.T, s *lineStream, id uint64, method string, params any) {
	t.Helper()
	req := &jsonrpc2.Request{ID: jsonrpc2.ID{Num: id}, Method: method}
	if err := req.SetParams(params); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteObject(req); err != nil {
		t.Fatal(err)
	}
}

// readUntilReply reads messages up to the reply to call id, and returns
// the output notes among them.
func readUntilReply(s *lineStream, id uint64) ([]outputNote, error) {
	var notes []outputNote
	for {
		var m struct {
			ID     *uint64         `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Error  json.RawMessage `json:"error"`
		}
		if err := s.ReadObject(&m); err != nil {
			return nil, fmt.Errorf("reading the reply to call %d: %w", id, err)
		}
		switch {
		case m.Method == methodOutput:
			var n outputNote
			if err := json.Unmarshal(m.Params, &n); err != nil {
				return nil, fmt.Errorf("an output note: %w", err)
			}
			notes = append(notes, n)
		case m.ID != nil && *m.ID == id && m.Error != nil:
			return nil, fmt.Errorf("call %d: %s", id, m.Error)
		case m.ID != nil && *m.ID == id:
			return notes, nil
		}
	}
}

// TestWireSpecRoundTrip: every field of a spec but its observer crosses
// the wire, Unsandboxed included (the far side's sandbox is the one to
// step out of).
func TestWireSpecRoundTrip(t *testing.T) {
	in := bash.ExecSpec{Command: "c", Workdir: "/w", Timeout: 3 * time.Second, Owner: "o", Workspace: "/w",
		SpillAfter: 9, Unsandboxed: true}
	b, err := json.Marshal(toWireSpec(in))
	if err != nil {
		t.Fatal(err)
	}
	var w wireSpec
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if out := w.spec(); !reflect.DeepEqual(out, in) {
		t.Errorf("%+v came back as %+v", in, out)
	}
}
