package bash

import (
	"errors"
	"fmt"
	"testing"
)

func TestUnknownTaskError(t *testing.T) {
	err := fmt.Errorf("reading: %w", &UnknownTaskError{ID: "bash-9"})
	if !errors.Is(err, ErrUnknownTask) {
		t.Error("UnknownTaskError does not match ErrUnknownTask")
	}
	if got := (&UnknownTaskError{ID: "bash-9"}).Error(); got != `unknown bash task "bash-9"` {
		t.Errorf("message %q", got)
	}
}

func TestTaskRead(t *testing.T) {
	if (TaskRead{}).Lossy() || !(TaskRead{Stderr: Output{Truncated: true}}).Lossy() {
		t.Error("Lossy")
	}
	if (Task{Status: StatusRunning}).Done() || !(Task{Status: StatusFailed}).Done() {
		t.Error("Done")
	}
}

func TestCommandError(t *testing.T) {
	err := fmt.Errorf("resolve: %w", &CommandError{Problem: ErrNULInCommand, Offset: 4})
	if !errors.Is(err, ErrNULInCommand) {
		t.Error("CommandError does not match its Problem")
	}
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Offset != 4 {
		t.Errorf("errors.As: %+v", ce)
	}
	if got := ce.Error(); got != "the command contains a NUL byte (at byte 4)" {
		t.Errorf("message %q", got)
	}
}

// TestLinkErrorNamesHostOnce: a dial error that names the host already (as
// an SSH dialer's does) does not get it twice.
func TestLinkErrorNamesHostOnce(t *testing.T) {
	for _, tt := range []struct {
		err  *LinkError
		want string
	}{
		{&LinkError{Host: "u@h:22", Err: errors.New("u@h:22: connection refused")}, "u@h:22: connection refused"},
		{&LinkError{Host: "u@h:22", Err: errors.New("connection refused")}, "u@h:22: connection refused"},
		{&LinkError{Host: "box", Task: "bash-3", Err: ErrLinkLost}, "box: task bash-3: " + ErrLinkLost.Error()},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%#v: %q, want %q", tt.err, got, tt.want)
		}
	}
}
