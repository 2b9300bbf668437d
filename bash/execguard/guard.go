package execguard

import "syscall"

// Exec is one program the kernel has loaded and that has not run yet.
type Exec struct {
	// Pid is the process, in the tracer's pid namespace.
	Pid int
	// Path is the program's resolved path (/proc/PID/exe): a script's
	// interpreter for a script.
	Path string
	// Argv is the program's argv as the kernel passed it; for a script,
	// the interpreter's, which names the script.
	Argv []string
	// File identifies the program's file: a link or a copy under another
	// name is the same program to a check that compares it.
	File FileID
}

// FileID identifies a file: its device and inode, and its size.
type FileID struct {
	Dev, Ino uint64
	Size     int64
}

// Refusal is an exec the check refused.
type Refusal struct {
	Exec
	// Rule is what the check said refused it.
	Rule string
	// Root is the pid of the adopted process the refused one descends
	// from (Tracer.Adopt; the first process of a Tree); 0 if unknown.
	Root int
}

// Options configure a traced tree. Check is required.
type Options struct {
	// Check decides on each exec of the tree but the first process's own
	// (which the caller chose): a non-empty result refuses it, and names
	// the rule that did. It runs on the tracer's thread while the
	// program waits: it must be quick, and it must not block.
	Check func(Exec) (rule string)
	// OnRefuse, if set, is told of each refusal, on the tracer's thread.
	// It must not block.
	OnRefuse func(Refusal)
	// Prepare, if set, runs on the tracer's thread before the first
	// process is started: what it sets on the thread (a seccomp filter, a
	// Landlock domain, no_new_privs) the whole tree inherits. An error
	// fails Start.
	Prepare func() error
	// Stopped, if set, runs on the tracer's thread once the first process
	// has stopped at its first exec, before its first instruction: it may
	// move it into a cgroup (a traced tree's thread cannot start it in
	// one: see CloneFilter). An error kills the process and fails Start.
	Stopped func(pid int) error
}

// Status is how the first process of a tree ended.
type Status = syscall.WaitStatus
