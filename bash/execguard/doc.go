// Package execguard checks every program a process tree runs at the
// moment the kernel has loaded it, before its first instruction, and
// kills the process when the check refuses it.
//
// The tree's first process is started traced (ptrace), and every process
// and thread it makes is traced from its birth (PTRACE_O_TRACEFORK,
// TRACEVFORK, TRACECLONE). At each successful execve the new image stops
// (PTRACE_EVENT_EXEC) with a single thread and a fresh address space, and
// the tracer reads what will run: the program's resolved path
// (/proc/PID/exe), its argv as the kernel copied it into the new image
// (/proc/PID/cmdline) and its working directory. Nothing the old image's
// threads or shared memory do can change those any more: the threads are
// gone and the argv lives in memory no other process maps. The check
// therefore sees the real argv of every program at any depth (a script's
// children, xargs, find -exec, make, a Python subprocess) and no race
// between check and use is possible from inside the process.
//
// What is not covered here: another process of the tree writing the
// stopped image's memory through /proc/PID/mem or process_vm_writev, which
// the caller closes with Options.Prepare (a seccomp filter and a Landlock
// domain the tree inherits; see the callers), and programs started outside
// the tree on its request (a service manager, a terminal multiplexer's
// server, ssh to this host), which the sandbox fences off.
//
// Tracing has a cost on every fork, thread creation and signal, and it
// changes what the traced programs can do: a debugger or strace inside the
// tree cannot attach (a process has one tracer), setuid programs run
// without their privileges, and a stopped process (SIGSTOP, SIGTSTP) is
// kept in its tracer's stop ('t' in /proc, not 'T') until SIGCONT.
package execguard
