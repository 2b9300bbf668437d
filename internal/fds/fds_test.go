//go:build linux

package fds

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloseOnExecFrom: a descriptor inherited without close-on-exec no
// longer reaches a program started after the call; those below first do.
func TestCloseOnExecFrom(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// A copy without close-on-exec, as a parent would hand one down.
	leak, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	open := func() bool {
		out, err := exec.Command("ls", "/proc/self/fd").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(" "+strings.Join(strings.Fields(string(out)), " ")+" ", " "+strconv.Itoa(leak)+" ")
	}
	if !open() {
		t.Fatal("setup: the duplicate does not reach a child")
	}
	if err := CloseOnExecFrom(leak + 1); err != nil {
		t.Fatal(err)
	}
	if !open() {
		t.Error("a descriptor below first was marked")
	}
	if err := CloseOnExecFrom(3); err != nil {
		t.Fatal(err)
	}
	if open() {
		t.Error("the inherited descriptor still reaches a child")
	}
}
