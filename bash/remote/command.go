package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Command dials by starting a program whose stdin and stdout are the
// stream: `ssh box dsh-bash executor`, `docker exec -i box dsh-bash
// executor`, `kubectl exec -i pod -- dsh-bash executor`. Its zero value is
// not usable: set Argv.
type Command struct {
	// Argv is the program and its arguments.
	Argv []string
	// Env is the program's environment; nil means this process's.
	Env []string
	// Stderr receives the program's stderr (ssh's own messages, say); nil
	// discards it.
	Stderr io.Writer
	// WaitDelay is how long the program gets to exit once the stream is
	// closed (its stdin closed) before it is killed. Default 5 s.
	WaitDelay time.Duration
}

// Dial starts the program. The stream's Close closes its stdin and waits
// for it to exit. On Linux the program is killed if this process dies.
func (c *Command) Dial(ctx context.Context) (io.ReadWriteCloser, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("remote: no command to start")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env, cmd.Stderr = c.Env, c.Stderr
	cmd.SysProcAttr = dieWithParent()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	wait := c.WaitDelay
	if wait <= 0 {
		wait = 5 * time.Second
	}
	return newCmdStream(cmd, in, out, wait), nil
}

// cmdStream is a running program's stdio.
type cmdStream struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  io.ReadCloser
	wait time.Duration
	exitWatch
	once sync.Once
}

func newCmdStream(cmd *exec.Cmd, in io.WriteCloser, out io.ReadCloser, wait time.Duration) *cmdStream {
	s := &cmdStream{cmd: cmd, in: in, out: out, wait: wait}
	s.watch(func() error {
		// Process.Wait, not Cmd.Wait, which would close stdout under a read.
		st, err := cmd.Process.Wait()
		if err == nil && !st.Success() {
			err = &exec.ExitError{ProcessState: st}
		}
		return err
	})
	return s
}

func (s *cmdStream) Read(p []byte) (int, error)  { return s.out.Read(p) }
func (s *cmdStream) Write(p []byte) (int, error) { return s.in.Write(p) }

// Close closes the program's stdin, waits for it to exit (killing it after
// the wait delay) and closes its stdout.
func (s *cmdStream) Close() error {
	s.once.Do(func() {
		s.in.Close()
		t := time.AfterFunc(s.wait, func() { killGroup(s.cmd.Process) })
		<-s.exited
		t.Stop()
		s.out.Close()
		_ = s.cmd.Wait() // the process is reaped: this only releases the stderr copy
	})
	return nil
}

// exitWatch waits, from a goroutine of its own, for a far side's program
// to end, and says how.
type exitWatch struct {
	exited  chan struct{} // closed when the program has ended
	waitErr error         // how it ended
}

func (w *exitWatch) watch(wait func() error) {
	w.exited = make(chan struct{})
	go func() {
		w.waitErr = wait()
		close(w.exited)
	}()
}

// exitErr says how the program ended, if it did (within a moment: its
// stream has just ended).
func (w *exitWatch) exitErr() error {
	select {
	case <-w.exited:
		return w.waitErr
	case <-time.After(2 * time.Second):
		return nil
	}
}
