//go:build linux

package local

import (
	"errors"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

// TestInputEOFAfterDeadline: an EOF alone closes the input even where the
// wait has run out before the write's turn came (a loaded machine), as
// closing needs no reader; data past the deadline is still blocked.
func TestInputEOFAfterDeadline(t *testing.T) {
	t.Parallel()
	var in input
	r, err := in.open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	past := time.Now().Add(-time.Second)
	if _, err := in.write([]byte("x"), false, past); !errors.Is(err, bash.ErrInputBlocked) {
		t.Errorf("data after the deadline: %v; want ErrInputBlocked", err)
	}
	if _, err := in.write(nil, true, past); err != nil {
		t.Fatalf("EOF after the deadline: %v", err)
	}
	if _, err := in.write([]byte("x"), false, time.Now().Add(time.Second)); !errors.Is(err, bash.ErrInputClosed) {
		t.Errorf("a write after EOF: %v; want ErrInputClosed", err)
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the command's end after EOF: read %d, %v; want end of file", n, err)
	}
}
