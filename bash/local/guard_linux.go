package local

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/execguard"
	"github.com/dshgo/dsh/permission"
	"golang.org/x/sys/unix"
)

// spawnGuarded starts the shell traced by execguard, every exec of its
// tree checked against req.ExecRules (see SpawnRequest.ExecRules).
func spawnGuarded(req *SpawnRequest) (Process, error) {
	files, closeNull, err := spawnFiles(req)
	if err != nil {
		return nil, err
	}
	defer closeNull()
	attr := spawnAttr(req)
	attr.Ptrace = true
	// A traced tree's thread cannot start a process into a cgroup (that
	// needs clone3, which it refuses): the shell is moved there before
	// its first instruction.
	attr.UseCgroupFD = false
	g := &guardedProcess{}
	tree, err := execguard.Start(func() (int, error) {
		return syscall.ForkExec(req.Path, req.Args, &syscall.ProcAttr{Dir: req.Dir, Env: req.Env, Files: files, Sys: attr})
	}, execguard.Options{Check: ExecCheck(req.ExecRules), OnRefuse: g.refused, Prepare: execguard.HardenThread,
		Stopped: func(pid int) error { return joinCgroup(req.CgroupFD, pid) }})
	if err != nil {
		return nil, err
	}
	g.tree = tree
	return g, nil
}

// joinCgroup moves process pid into the cgroup whose directory is open
// at dirfd (-1: none), as CLONE_INTO_CGROUP would have started it there.
func joinCgroup(dirfd, pid int) error {
	if dirfd < 0 {
		return nil
	}
	fd, err := unix.Openat(dirfd, "cgroup.procs", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the command's cgroup: %w", err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(strconv.Itoa(pid))); err != nil {
		return fmt.Errorf("move the shell into its cgroup: %w", err)
	}
	return nil
}

// spawnFiles are the shell's descriptors 0, 1, 2, 3…: /dev/null for a
// missing stdin, which closeNull closes once the shell is started.
func spawnFiles(req *SpawnRequest) (files []uintptr, closeNull func(), err error) {
	closeNull = func() {}
	stdin := req.Stdin
	if stdin == nil {
		if stdin, err = os.Open(os.DevNull); err != nil {
			return nil, nil, err
		}
		closeNull = func() { stdin.Close() }
	}
	files = []uintptr{stdin.Fd(), req.Stdout.Fd(), req.Stderr.Fd()}
	for _, f := range req.ExtraFiles {
		files = append(files, f.Fd())
	}
	return files, closeNull, nil
}

// guardedProcess is a shell whose tree execguard traces.
type guardedProcess struct {
	tree *execguard.Tree

	mu      sync.Mutex
	refusal Refusals
}

func (g *guardedProcess) Pid() int { return g.tree.Pid() }

func (g *guardedProcess) Wait() (ExitStatus, error) {
	ws := g.tree.Wait()
	st := ExitStatus{Code: ws.ExitStatus()}
	if ws.Signaled() {
		st = ExitStatus{Code: -1, Signal: ws.Signal()}
	}
	g.mu.Lock()
	st.Refused, st.RefusedMore = g.refusal.List()
	g.mu.Unlock()
	return st, nil
}

// ExecCheck is the execguard check of rules: the pattern of the deny rule
// that refuses a program, or "".
func ExecCheck(rules *permission.ExecRules) func(execguard.Exec) string {
	return func(e execguard.Exec) string {
		if r := rules.Refuse(execProgram(e)); r != nil {
			return r.Pattern
		}
		return ""
	}
}

func (g *guardedProcess) refused(r execguard.Refusal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refusal.Add(bash.Refusal{Program: r.Path, Argv: r.Argv, Rule: r.Rule})
}

// execProgram is what permission.ExecRules needs to know of an exec.
func execProgram(e execguard.Exec) permission.ExecProgram {
	pid := strconv.Itoa(e.Pid)
	return permission.ExecProgram{Path: e.Path, Argv: e.Argv, Cwd: e.Cwd,
		Dev: e.File.Dev, Ino: e.File.Ino, Size: e.File.Size,
		Open: func() (io.ReadCloser, error) { return os.Open("/proc/" + pid + "/exe") }}
}
