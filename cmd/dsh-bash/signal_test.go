//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
)

// rawMCP is dsh-bash mcp driven with raw JSON-RPC lines over pipes. Its
// stdout is read only when the test waits for an answer (a test can stop
// reading, as a stuck client does), with a deadline.
type rawMCP struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	outR *os.File
	last []string // the last lines read, for a failure message
	tmp  string   // its TMPDIR, where its spill directory goes
	init string   // the answer to initialize
}

func startRawMCP(t *testing.T, flags ...string) *rawMCP {
	t.Helper()
	return startRawMCPIn(t, t.TempDir(), flags...)
}

// startRawMCPIn starts dsh-bash mcp with TMPDIR=tmp.
func startRawMCPIn(t *testing.T, tmp string, flags ...string) *rawMCP {
	t.Helper()
	cmd := execCommand(append([]string{"mcp", "--cwd", t.TempDir()}, flags...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe() // pollable: reads can have deadlines
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	err = cmd.Start()
	outW.Close()
	if err != nil {
		outR.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { outR.Close() })
	m := &rawMCP{t: t, cmd: cmd, in: in, out: bufio.NewReader(outR), outR: outR, tmp: tmp}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	m.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	m.init = m.answer(0)
	return m
}

func (m *rawMCP) send(lines ...string) {
	m.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(m.in, l+"\n"); err != nil {
			m.t.Fatalf("write: %v", err)
		}
	}
}

// call sends a bash call with the given id.
func (m *rawMCP) call(id int, command string, background bool) {
	args, _ := json.Marshal(map[string]any{"command": command, "description": "d", "run_in_background": background})
	m.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"bash","arguments":%s}}`, id, args))
}

// answer reads until the response to id and returns its raw line; the
// test fails if it does not come within testwait.Limit.
func (m *rawMCP) answer(id int) string {
	m.t.Helper()
	if err := m.outR.SetReadDeadline(time.Now().Add(testwait.Limit)); err != nil {
		m.t.Fatal(err)
	}
	for {
		line, err := m.out.ReadString('\n')
		if line != "" {
			m.last = append(m.last, strings.TrimSuffix(line, "\n"))
			m.last = m.last[max(0, len(m.last)-5):]
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			m.t.Fatalf("no answer to request %d within %v; last lines read: %q", id, testwait.Limit, m.last)
		}
		if err != nil {
			m.t.Fatalf("no answer to request %d: %v; last lines read: %q", id, err, m.last)
		}
		var v struct{ ID *int }
		if json.Unmarshal([]byte(line), &v) == nil && v.ID != nil && *v.ID == id {
			return line
		}
	}
}

// exited waits for dsh-bash to exit.
func (m *rawMCP) exited() {
	m.t.Helper()
	waitCmd(m.t, m.cmd, exitWait, "dsh-bash mcp did not exit")
}

// waitCmd waits for cmd to exit and returns what Wait returned; the test
// fails with what if that takes longer than d, a bound only for a test
// that would otherwise hang.
func waitCmd(t *testing.T, cmd *exec.Cmd, d time.Duration, what string) error {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(d):
		t.Fatal(what)
		return nil
	}
}

// startCommands starts a background task and a foreground call that
// ignores SIGTERM (so only the SIGKILL of the escalation stops it) and
// returns their processes' pids once both run.
func (m *rawMCP) startCommands() []int {
	m.t.Helper()
	dir := m.t.TempDir()
	bg, fg := filepath.Join(dir, "bg"), filepath.Join(dir, "fg")
	for _, p := range []string{bg, fg} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			m.t.Fatal(err)
		}
	}
	m.call(1, "echo $$ > "+bg+"; exec sleep 300", true)
	m.answer(1)
	bgPid := proctest.PidFromFIFO(m.t, bg)
	m.call(2, fmt.Sprintf("trap '' TERM; sleep 300 & echo $! > %s; wait", fg), false)
	return []int{bgPid, proctest.PidFromFIFO(m.t, fg)}
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if proctest.Alive(pid) {
			t.Errorf("process %d outlived dsh-bash", pid)
		}
	}
}

// TestMCPSignalsAbortCalls: SIGTERM, SIGINT and SIGHUP abort a foreground
// call in flight (one that ignores SIGTERM, so the escalation must reach
// SIGKILL) and kill the background tasks, and dsh-bash exits with nothing
// left running.
func TestMCPSignalsAbortCalls(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			m := startRawMCP(t)
			pids := m.startCommands()
			start := time.Now()
			m.cmd.Process.Signal(sig)
			m.exited()
			t.Logf("exited %v after %v", m.cmd.ProcessState, time.Since(start))
			if ws := m.cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
				t.Errorf("dsh-bash died of %v instead of cleaning up", ws.Signal())
			}
			assertGone(t, pids)
		})
	}
}

// TestMCPStdoutGone: a client whose reader died (stdout is a broken pipe)
// is gone: dsh-bash must clean up and exit, not die of SIGPIPE and leave
// its commands behind.
func TestMCPStdoutGone(t *testing.T) {
	t.Parallel()
	m := startRawMCP(t)
	pids := m.startCommands()
	m.outR.Close()
	m.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`) // its answer cannot be written
	m.exited()
	if ws := m.cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Errorf("dsh-bash died of %v", ws.Signal())
	}
	assertGone(t, pids)
}

// TestRunStdoutGone: dsh-bash run whose stdout reader has gone (as in
// `dsh-bash run -- 'server & …' | head -1`) still stops what the command
// left running.
func TestRunStdoutGone(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := execCommand("run", "--", "sleep 300 & echo $! > "+pidFile+"; seq 100000")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // nobody reads: the first write fails
	cmd.Stdout = w
	err = run(t, cmd)
	w.Close()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Errorf("dsh-bash run died of %v (%v)", ws.Signal(), err)
	}
	assertGone(t, []int{proctest.PidFromFile(t, pidFile)})
}

// TestSecretsOutOfReach: a command of the same (unprivileged) user cannot
// read dsh-bash's environment through /proc: the process is not dumpable.
func TestSecretsOutOfReach(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run dsh-bash as another, unprivileged user")
	}
	dir, err := os.MkdirTemp("", "dsh-bash-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "dsh-bash")
	placeBinary(t, bin)
	cmd := exec.Command(bin, "run", "--sandbox=off", "--", `tr '\0' '\n' < /proc/$PPID/environ | grep DSH_TEST_SECRET_TOKEN || echo unreadable`)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "DSH_TEST_SECRET_TOKEN=hunter2"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := run(t, cmd); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if strings.Contains(out.String(), "hunter2") || !strings.HasPrefix(out.String(), "unreadable") {
		t.Errorf("the command read dsh-bash's environment: %q", out.String())
	}
}

// TestStartupCleansAfterKilled: a dsh-bash that was SIGKILLed leaves its
// cgroup (with the processes in it) and its spill directory behind; the
// next dsh-bash started beside it removes both and kills the processes.
//
// Not parallel: any dsh-bash starting meanwhile would clean up first.
func TestStartupCleansAfterKilled(t *testing.T) {
	m := startRawMCP(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	m.call(1, "sleep 300 & echo $! > "+pidFile+"; disown; seq 100000 >&2", false)
	m.answer(1)
	if spills, _ := filepath.Glob(filepath.Join(m.tmp, "dsh-spill-[0-9]*")); len(spills) != 1 {
		t.Fatalf("spill directories of the first dsh-bash: %q", spills)
	}
	m.cmd.Process.Kill()
	m.cmd.Wait()
	pid := proctest.PidFromFile(t, pidFile)
	if !proctest.Alive(pid) {
		t.Fatal("the sleep died with its dsh-bash: nothing to clean up")
	}
	_, stderr, code := dshBashEnv(t, t.TempDir(), []string{"TMPDIR=" + m.tmp}, "run", "--", "true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := proctest.WaitExit(pid, exitWait); err != nil {
		t.Errorf("the killed dsh-bash's sleep survived the next start: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(m.tmp, "dsh-spill-[0-9]*")); len(left) != 0 {
		t.Errorf("spill directories left: %q", left)
	}
	if !strings.Contains(stderr, "left behind by a dsh-bash that was killed") {
		t.Errorf("stderr does not say what was removed: %q", stderr)
	}
}

// TestMCPSignalWithStuckClient: a client that stopped reading stdout (its
// pipe full of answers) does not keep dsh-bash from stopping on SIGTERM.
func TestMCPSignalWithStuckClient(t *testing.T) {
	t.Parallel()
	m := startRawMCP(t)
	for i := range 20 {
		m.call(10+i, "seq 7000", false) // about 30 KB of answer each, never read
	}
	fifo := filepath.Join(t.TempDir(), "sync")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	m.call(9, "echo $$ > "+fifo+"; sleep 300", false)
	proctest.PidFromFIFO(t, fifo)
	m.cmd.Process.Signal(syscall.SIGTERM)
	m.exited()
	if ws := m.cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Errorf("dsh-bash died of %v", ws.Signal())
	}
}
