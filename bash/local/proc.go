package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dshgo/dsh/bash"
)

// proc is one running command: its shell, its process group or cgroup, its
// two output streams, and the goroutines that watch them.
type proc struct {
	out, errs *stream
	grp       group
	shell     Process
	pipes     [2]*os.File // read ends, closed by their readers (or forced)
	input     input       // the write end of the input pipe (ExecSpec.Input)
	noProbe   bool        // Options.NoInputProbe
	// probesLeft counts probes of this task given up on (maxProbeTime)
	// that have not returned: none starts meanwhile.
	probesLeft atomic.Int32
	news       *waitNews // when the OnTaskWaiting listeners hear of it

	shellDone chan struct{} // closed once the shell has been reaped
	status    ExitStatus    // set before shellDone is closed
	waitErr   error

	onOutput  func(bash.Stream, []byte) // the spec's observer, or nil
	outputMu  sync.Mutex                // serializes onOutput calls
	muted     bool                      // under outputMu: Run has returned
	pipesDone chan struct{}             // closed once both streams hit EOF
	open      atomic.Int32              // streams not at EOF yet
	stopReq   chan struct{}             // closed by stop
	linger    time.Duration             // foreground: how long to wait for leftovers
	lingering chan struct{}             // closed linger after the shell exited, unless done or stopped
	stopOnce  sync.Once
	done      chan struct{} // closed once shell, pipes and group are all gone
}

// spawn starts spec's command. The caller has counted the proc's goroutines
// in wg (4 of them) and undoes that itself on error.
func (e *Executor) spawn(ctx context.Context, spec bash.ExecSpec, linger time.Duration) (*proc, error) {
	if err := checkCommand(spec.Command); err != nil {
		return nil, err
	}
	if err := checkWorkdir(spec.Workdir); err != nil {
		return nil, err
	}
	p := &proc{
		out:       newStream("stdout", spec.Owner, e.maxOutput, spec.SpillAfter, e.spill),
		errs:      newStream("stderr", spec.Owner, e.maxOutput, spec.SpillAfter, e.spill),
		shellDone: make(chan struct{}),
		status:    ExitStatus{Code: -1},
		pipesDone: make(chan struct{}),
		stopReq:   make(chan struct{}),
		lingering: make(chan struct{}),
		done:      make(chan struct{}),
		linger:    linger,
		onOutput:  spec.OnOutput,
		noProbe:   e.noInputProbe,
		news:      newWaitNews(),
	}
	w, err := p.makePipes()
	if err != nil {
		return nil, err
	}
	var stdin *os.File // the command's end of its input pipe, or its terminal
	if spec.Input || spec.Terminal != nil {
		if stdin, err = p.openInput(spec); err != nil {
			closeAll(p.pipes[:]...)
			closeAll(w[:]...)
			return nil, err
		}
		defer stdin.Close() // the shell holds its copy
	}
	out := w // the shell's stdout and stderr
	if spec.Terminal != nil {
		out = [2]*os.File{stdin, stdin}
	}
	err = e.startShellRetrying(ctx, p, spec, out, stdin)
	closeAll(w[:]...)
	if err != nil {
		closeAll(p.pipes[:]...)
		p.input.close()
		return nil, err
	}
	p.open.Store(2)
	go p.drain(p.pipes[0], p.out, bash.Stdout, e)
	go p.drain(p.pipes[1], p.errs, bash.Stderr, e)
	go func() {
		defer e.wg.Done()
		p.status, p.waitErr = p.shell.Wait()
		close(p.shellDone)
	}()
	go p.settle(e)
	return p, nil
}

// startShellRetrying starts the shell (see startShell), passing the
// command in a file where argv has no room for it, and again in a new
// cgroup when it was killed before it could run.
func (e *Executor) startShellRetrying(ctx context.Context, p *proc, spec bash.ExecSpec, out [2]*os.File, stdin *os.File) error {
	long := len(spec.Command) > maxArgvCommand
	err := e.startShell(ctx, p, spec, out, stdin, long)
	if !long && errors.Is(err, syscall.E2BIG) {
		// The environment left too little room for the command in argv.
		long = true
		err = e.startShell(ctx, p, spec, out, stdin, long)
	}
	for try := 0; try < 2 && errors.Is(err, errUnborn); try++ {
		err = e.startShell(ctx, p, spec, out, stdin, long) // in a new cgroup
	}
	return err
}

// maxArgvCommand is the longest command passed in argv: Linux refuses a
// single argument of MAX_ARG_STRLEN (128 KiB) bytes or more, its NUL
// included. A longer command is read from a file (see startShell).
const maxArgvCommand = 128<<10 - 1

// readCommand is the script that runs a command read from fd 3, as `bash -c`
// would run it: read keeps every byte (a command substitution would drop
// trailing newlines), and eval runs with fd 3 closed, so no child inherits
// it, after unsetting the variable that held the command.
const readCommand = `IFS= read -r -d '' __dsh_command </dev/fd/3; eval "unset __dsh_command; $__dsh_command" 3<&-`

// makePipes makes the two output pipes; it returns their write ends.
func (p *proc) makePipes() ([2]*os.File, error) {
	var w [2]*os.File
	for i := range 2 {
		r, wr, err := outputPipe()
		if err != nil {
			closeAll(p.pipes[:i]...)
			closeAll(w[:i]...)
			return w, fmt.Errorf("make an output pipe: %w", err)
		}
		p.pipes[i], w[i] = r, wr
	}
	return w, nil
}

// startShell starts bash in a fresh group, with the command in argv, or,
// viaFile, in a file on fd 3 (see readCommand).
func (e *Executor) startShell(ctx context.Context, p *proc, spec bash.ExecSpec, w [2]*os.File, stdin *os.File, viaFile bool) error {
	req := &SpawnRequest{
		Owner: spec.Owner, Workspace: spec.Workspace, Path: e.shell, Dir: spec.Workdir, Env: e.env,
		Args:  []string{"bash", "--noprofile", "--norc", "-c", spec.Command},
		Stdin: stdin, Stdout: w[0], Stderr: w[1], CgroupFD: -1, Setsid: true, Unsandboxed: spec.Unsandboxed,
		Setctty: spec.Terminal != nil, ExecRules: e.execRules.Load(),
	}
	grp, err := e.cont.prepare(req)
	if err != nil {
		return err
	}
	if viaFile {
		f, err := commandFile(spec.Command, e.spill)
		if err != nil {
			grp.started(0, err)
			grp.release()
			return fmt.Errorf("pass the command in a file: %w", err)
		}
		defer f.Close()
		req.Args[4], req.ExtraFiles = readCommand, []*os.File{f}
	}
	shell, err := e.spawnFn(ctx, req)
	pid := 0
	if err == nil {
		pid = shell.Pid()
	}
	unborn := grp.started(pid, err)
	if err != nil {
		grp.release()
		return fmt.Errorf("start bash: %w", err)
	}
	if unborn {
		_, _ = shell.Wait()
		grp.release()
		return errUnborn
	}
	p.grp, p.shell = grp, shell
	return nil
}

// errUnborn: the shell was killed before it ran anything (see group.started).
var errUnborn = errors.New("the shell was killed before it could run")

// checkCommand refuses a command bash cannot hold in a string.
func checkCommand(cmd string) error {
	if i := strings.IndexByte(cmd, 0); i >= 0 {
		return &bash.CommandError{Problem: bash.ErrNULInCommand, Offset: i}
	}
	return nil
}

// procGoroutines is how many goroutines spawn starts, each calling wg.Done.
const procGoroutines = 4

func checkWorkdir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in the WorkdirError
		}
		return &bash.WorkdirError{Path: dir, Err: err}
	}
	if !fi.IsDir() {
		return &bash.WorkdirError{Path: dir, Err: bash.ErrNotDirectory}
	}
	return nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// drain copies one pipe into its stream until EOF. Its buffer starts small
// (an idle task costs little) and doubles while reads fill it, up to 1 MiB.
func (p *proc) drain(f *os.File, s *stream, name bash.Stream, e *Executor) {
	defer e.wg.Done()
	buf := make([]byte, 16<<10)
	var held []byte // an observed character not complete yet
	for {
		n, err := f.Read(buf)
		if n > 0 {
			s.write(buf[:n])
			if p.onOutput != nil {
				piece := buf[:n]
				if len(held) > 0 { // rare: the previous read split a character
					piece = append(held, piece...)
				}
				held = p.observe(name, piece, false)
			}
			if n == len(buf) && len(buf) < 1<<20 {
				buf = make([]byte, 2*len(buf))
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.synced(f) // all read so far is in s
			continue
		}
		if err != nil {
			break
		}
	}
	if p.onOutput != nil && len(held) > 0 {
		p.observe(name, held, true)
	}
	f.Close()
	s.eof()
	s.synced(nil)
	if p.open.Add(-1) == 0 {
		close(p.pipesDone)
	}
}

// observe passes b to the output observer, holding back an incomplete
// trailing character (unless final), which it returns.
func (p *proc) observe(name bash.Stream, b []byte, final bool) []byte {
	keep := len(b)
	if !final {
		keep = completeLen(b)
	}
	if keep > 0 {
		p.outputMu.Lock()
		if !p.muted {
			p.onOutput(name, validBytes(b[:keep]))
		}
		p.outputMu.Unlock()
	}
	return append(b[:0:0], b[keep:]...)
}

// mute ends the observer's calls; once it returns there are no more.
func (p *proc) mute() {
	p.outputMu.Lock()
	p.muted = true
	p.outputMu.Unlock()
}

// stop starts the one escalation used for timeouts, aborts, Kill and Close:
// SIGTERM to every process of the command, SIGKILL after the grace period.
// It is idempotent and returns at once; done says when it is over.
func (p *proc) stop() { p.stopOnce.Do(func() { close(p.stopReq) }) }

// stopping reports whether stop was called.
func (p *proc) stopping() bool { return isClosed(p.stopReq) }

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
