//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
)

// TestSandboxDiesWithServer: a process a sandboxed command left running
// (adopted as a task) dies with a dsh-bash that is SIGKILLed, which cannot
// clean up: the jail goes with the server. Without the sandbox it survives
// (until the next dsh-bash's start-up clean-up), which shows the test can
// tell.
func TestSandboxDiesWithServer(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			m := startRawMCP(t, "--sandbox="+mode)
			name := "dsh-survivor-" + mode + "-" + strconv.Itoa(os.Getpid())
			m.call(1, "(exec -a "+name+" sleep 300) > /dev/null 2>&1 & echo started", false)
			m.answer(1)
			pid := findByArgv0(t, name)
			m.cmd.Process.Kill()
			m.cmd.Wait()
			if mode == "off" {
				defer syscall.Kill(pid, syscall.SIGKILL)
				if !proctest.Alive(pid) {
					t.Fatal("without the sandbox the leftover died with dsh-bash: the test cannot tell")
				}
				return
			}
			if err := proctest.WaitExit(pid, 10*time.Second); err != nil {
				t.Errorf("the jailed leftover outlived dsh-bash: %v", err)
			}
			// What the jail leaves on disk, its session's /tmp, goes at the
			// next start.
			left, _ := filepath.Glob(filepath.Join(m.tmp, "dsh-jails-*"))
			if len(left) != 1 {
				t.Fatalf("the killed server's jails' directory: %q, want one", left)
			}
			_, errOut, _ := dshBashEnv(t, t.TempDir(), []string{"TMPDIR=" + m.tmp}, "run", "--", "true")
			if _, err := os.Stat(left[0]); err == nil || !strings.Contains(errOut, "removed "+left[0]) {
				t.Errorf("the next dsh-bash left %s (stderr %q)", left[0], errOut)
			}
		})
	}
}

// requireBwrap skips a test without bubblewrap, except under CI, which
// installs it.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("bwrap is not installed")
	}
}

// findByArgv0 finds the one process whose argv[0] is name.
func findByArgv0(t *testing.T, name string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		if argv0, _, _ := bytes.Cut(b, []byte{0}); string(argv0) == name {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatalf("no process named %s", name)
	return 0
}
