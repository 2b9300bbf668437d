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
