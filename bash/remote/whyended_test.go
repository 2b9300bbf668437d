package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
)

// endedStream is a stream that ended at once, saying why.
type endedStream struct{ end error }

func (endedStream) Read([]byte) (int, error)    { return 0, io.EOF }
func (endedStream) Write(p []byte) (int, error) { return 0, io.ErrClosedPipe }
func (endedStream) Close() error                { return nil }
func (s endedStream) EndErr() error             { return s.end }

// exitStatus is an error with an exit status, as client-go's and x/crypto/ssh's.
type exitStatus int

func (e exitStatus) Error() string   { return fmt.Sprintf("Process exited with status %d", int(e)) }
func (e exitStatus) ExitStatus() int { return int(e) }

// TestNotFoundHint: a handshake whose far side's program exited 127 hints
// that dsh-bash is missing there; one that failed otherwise, with a 127
// somewhere in its text (an address on loopback, say), does not.
func TestNotFoundHint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  error
		hint bool
	}{
		{"exit 127", exitStatus(127), true},
		{"exit 1", exitStatus(1), false},
		{"API server refused", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), false},
		{"exit 127 wrapped", &bash.LinkError{Host: "h", Err: exitStatus(127)}, true},
		{"exit 1 on 10.0.127.3", fmt.Errorf("pod on 10.0.127.3: %w", exitStatus(1)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Dial(context.Background(), func(context.Context) (io.ReadWriteCloser, error) {
				return endedStream{tt.end}, nil
			}, &Options{Host: "far"})
			if err == nil {
				t.Fatal("a handshake over an ended stream succeeded")
			}
			if hint := strings.Contains(err.Error(), "is dsh-bash installed there?"); hint != tt.hint {
				t.Errorf("err = %v: the not-installed hint there %v, want %v", err, hint, tt.hint)
			}
		})
	}
}
