// Package sandbox is a bash.Executor that runs every command in a jail of
// its session: a bubblewrap (bwrap) jail with a seccomp filter, and
// Landlock as a second layer, around the local executor of package
// bash/local.
//
// # Design
//
// One jail per session (owner token and workspace) stays up for the
// session's life, and each command starts inside it: the jail's pid 1 is
// an agent, the running binary executed again (see [Main]), which starts
// each shell when the host asks over a socket pair and hands back a pidfd
// for it. So a sandboxed call costs about what an unsandboxed one does,
// and only a session's first call pays for starting its jail. Everything
// else (output, spill files, timeouts, the SIGTERM→SIGKILL escalation of
// the whole tree, adoption of leftovers, task limits, cgroups) is the
// local executor's, unchanged: the model reads the same bytes with or
// without the sandbox.
//
// # What a jail is
//
//   - Namespaces: its own user, pid, ipc and uts namespaces, and a
//     network namespace with only loopback when [Policy].Network is
//     [NetworkOff]; no capability, no new privileges, user namespaces
//     disabled inside.
//   - System calls: a seccomp filter refusing ptrace, process_vm_*,
//     io_uring, bpf, perf_event_open, userfaultfd, the keyring, mount and
//     namespace calls, modules, kexec, TIOCSTI and other architectures.
//   - Files: the host's root read-only; writable: the session's workspace,
//     a private /tmp removed when the session ends, the tool caches in the
//     home directory ([CachePaths], unless [Policy].LockCaches) and
//     [Policy].Writable; read-only inside the workspace: .git/hooks and
//     .git/config; hidden: the credentials of [HiddenHomePaths], the
//     system paths of [HiddenSystemPaths] and [Policy].Hidden. The agent
//     adds Landlock rules allowing writes only where the binds do.
//   - Lifetime: the agent exits when the host's end of its socket closes,
//     and bwrap dies with its parent, so no jail outlives the server.
//     [CleanStale] removes what a killed server left on disk.
//
// # Use
//
// A program that makes an Executor calls [Main] first thing in main (a
// test binary, in TestMain). [New] runs a command in a throwaway jail and
// fails with an error matching [ErrUnavailable] where jails cannot work
// here (no bwrap, no user namespaces, not Linux), saying what to install or
// enable. [Executor.EndOwner] ends a session's jails; Close ends them all.
//
// What the sandbox does not protect against is listed in the README
// ("The sandbox").
package sandbox
