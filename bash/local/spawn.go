package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/permission"
)

// SpawnFunc starts one command's shell: the hook (Options.Spawn) with which
// a sandbox starts it elsewhere (inside a namespace, through a helper)
// while the executor keeps all around it: the cgroup or process group, the
// output pipes and spill files, leftover adoption, the kill escalation,
// the limits.
//
// It must start exactly the process req describes (argv, directory,
// environment, descriptors), born into req.CgroupFD when that is set, and
// return at once. The Process reports the shell's own wait status, not a
// helper's. req's descriptors stay the executor's, which closes them once
// SpawnFunc returns.
type SpawnFunc func(ctx context.Context, req *SpawnRequest) (Process, error)

// SpawnRequest is one shell to start.
type SpawnRequest struct {
	// Owner is the owner token of the command (the spec's Owner): it tells
	// which session the command belongs to.
	Owner string
	// Workspace is the spec's Workspace: the directory of the session.
	Workspace string
	// Path is the shell binary as the executor found it on the host.
	Path string
	// Args is the full argv, Args[0] included: bash --noprofile --norc -c …
	Args []string
	// Dir is the working directory, absolute.
	Dir string
	// Env is the whole environment, already scrubbed.
	Env []string
	// Stdin is the read end of the input pipe (ExecSpec.Input); nil means
	// /dev/null.
	Stdin *os.File
	// Stdout and Stderr are the write ends of the output pipes.
	Stdout, Stderr *os.File
	// ExtraFiles are descriptors 3, 4, … of the shell.
	ExtraFiles []*os.File
	// CgroupFD, when not -1, is an open directory of the cgroup v2 the shell
	// must be born in (clone3's CLONE_INTO_CGROUP), so that not one of its
	// instructions runs outside it.
	CgroupFD int
	// Setsid starts the shell in a new session and process group.
	Setsid bool
	// Setctty makes Stdin, a terminal, the controlling terminal of that
	// session (ExecSpec.Terminal).
	Setctty bool
	// Unsandboxed is the spec's: a SpawnFunc that sandboxes starts this
	// one shell as SpawnExec does.
	Unsandboxed bool
	// ExecRules, when it has rules, are deny rules the SpawnFunc must
	// enforce at every exec of the shell's tree (Options.ExecRules), also
	// for an Unsandboxed shell, and report in ExitStatus.Refused.
	ExecRules *permission.ExecRules
}

// Process is a started shell.
type Process interface {
	// Pid is the shell's process id as this process sees it (in the
	// executor's pid namespace).
	Pid() int
	// Wait waits for the shell to end and returns its wait status. It is
	// called once. An error means the status is unknown.
	Wait() (ExitStatus, error)
}

// ExitStatus is how a shell ended: an exit code, or a signal.
type ExitStatus struct {
	// Code is the exit code, -1 when a signal ended the shell.
	Code int
	// Signal is the signal that ended the shell; 0 after a normal exit.
	Signal syscall.Signal
	// Limit names the resource limit that ended the shell ("memory limit
	// 2 GiB"), when a SpawnFunc that enforces limits knows one did.
	Limit string
	// Note is what a SpawnFunc that confines the shell has to tell the
	// model of the command's effect on its confinement (RunResult.Note).
	Note string
	// Refused are the execs the SpawnFunc refused by req.ExecRules, at
	// most bash.MaxRefusals; RefusedMore counts the others.
	Refused     []bash.Refusal
	RefusedMore int
}

// SpawnExec is the default SpawnFunc: the shell started with os/exec on
// this host; with req.ExecRules, traced by execguard.
func SpawnExec(_ context.Context, req *SpawnRequest) (Process, error) {
	if len(req.ExecRules.Patterns()) > 0 {
		return spawnGuarded(req)
	}
	attr := spawnAttr(req)
	cmd := &exec.Cmd{
		Path:        req.Path,
		Args:        req.Args,
		Dir:         req.Dir,
		Env:         req.Env,
		Stdout:      req.Stdout,
		Stderr:      req.Stderr,
		ExtraFiles:  req.ExtraFiles,
		SysProcAttr: attr,
	}
	if req.Stdin != nil {
		cmd.Stdin = req.Stdin
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return execProcess{cmd}, nil
}

type execProcess struct{ cmd *exec.Cmd }

func (p execProcess) Pid() int { return p.cmd.Process.Pid }

func (p execProcess) Wait() (ExitStatus, error) {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return ExitStatus{Code: -1}, err
	}
	return exitStatusOf(p.cmd.ProcessState), nil
}
