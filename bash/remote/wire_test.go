package remote

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

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
		{"workdir permission", &bash.WorkdirError{Path: "/w", Err: fs.ErrPermission}, nil},
		{"workdir other", &bash.WorkdirError{Path: "/w", Err: errors.New("too many links")}, nil},
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

// TestOutboxBounded: while the link is stuck, the outbox keeps at most its
// bound, drops the oldest bytes at character boundaries and counts them,
// and sends the rest in order once the link moves.
func TestOutboxBounded(t *testing.T) {
	release, stuck := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var got []piece
	first := true
	o := newOutbox(1000, 0, func(p piece) {
		if first {
			first = false
			close(stuck)
			<-release // the link is stuck on the first piece
		}
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	o.add(bash.Stdout, []byte("head"))
	testwait.Recv(t, stuck, "send of the first piece") // it is out, and stuck
	total := 0
	for i := 0; i < 10000; i++ {
		stream := bash.Stdout
		if i%3 == 0 {
			stream = bash.Stderr
		}
		text := []byte(strings.Repeat("é", 50)) // 100 bytes, 2 per character
		o.add(stream, text)
		total += len(text)
		if n := o.pendingBytes(); n > 1000 {
			t.Fatalf("%d bytes pending, over the bound of 1000", n)
		}
	}
	close(release)
	o.close()
	sent, skipped := 0, int64(0)
	for _, p := range got[1:] {
		if !utf8.Valid(p.text) {
			t.Fatalf("a piece is not valid UTF-8: %q", p.text[:8])
		}
		sent += len(p.text)
		skipped += p.skipped
	}
	if int64(sent)+skipped != int64(total) || sent > 1000 || skipped == 0 {
		t.Errorf("sent %d + skipped %d, want %d in all, at most 1000 sent", sent, skipped, total)
	}
}

// pendingBytes is how many bytes wait unsent.
func (o *outbox) pendingBytes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size
}
