//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
	"golang.org/x/sys/unix"
)

// cttyHelper is a program with a controlling terminal: it opens a pty,
// starts a session and makes the pty its terminal, checks that /dev/tty
// opens, then runs a command that tries to open /dev/tty through an
// executor and prints what the command printed.
func cttyHelper(marker, spillDir string) int {
	fail := func(err error) int { fmt.Println("error:", err); return 1 }
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fail(err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return fail(fmt.Errorf("unlock the pty: %w", err))
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		return fail(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fail(err)
	}
	defer slave.Close()
	if _, err := unix.Setsid(); err != nil {
		return fail(fmt.Errorf("setsid: %w", err))
	}
	if err := unix.IoctlSetInt(int(slave.Fd()), unix.TIOCSCTTY, 0); err != nil {
		return fail(fmt.Errorf("TIOCSCTTY: %w", err))
	}
	if tty, err := os.Open("/dev/tty"); err != nil {
		return fail(fmt.Errorf("the helper has no terminal itself: %w", err))
	} else {
		tty.Close()
	}
	e, err := New(&Options{SpillDir: spillDir, Env: []string{marker}})
	if err != nil {
		return fail(err)
	}
	spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "exec 3</dev/tty && echo has-tty || echo no-tty"})
	res, err := e.Run(context.Background(), spec)
	e.Close()
	if err != nil {
		return fail(err)
	}
	fmt.Print(res.Stdout.Text)
	// Closing the terminal hangs up its session: us.
	signal.Ignore(unix.SIGHUP)
	return 0
}

// TestNoControllingTerminal: even when the program running the executor
// has a controlling terminal, commands do not: each runs in a new session,
// so a program that opens /dev/tty fails at once instead of waiting for a
// person at a terminal nobody watches.
func TestNoControllingTerminal(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "DSH_TEST_HELPER=ctty "+marker+" "+t.TempDir())
	out, err := cmd.Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != "no-tty" {
		t.Errorf("the command, run by a program with a terminal, printed %q (%v); want no-tty", got, err)
	}
}
