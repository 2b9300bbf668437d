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
//     [NetworkOff] or [NetworkAllowlist]; no capability, no new
//     privileges, user namespaces disabled inside.
//   - Network: the host's ([NetworkOn]), none ([NetworkOff]), or only
//     through a proxy ([NetworkAllowlist]): the agent listens at
//     [ProxyAddr] in the jail's namespace and hands the listener to the
//     host, where [Options].Egress (package egress) decides what each
//     connection may reach; [ProxyEnv] points the commands' clients at it.
//     Services on the host's loopback that [Policy].Forward names are
//     the jail's at the same address of its own loopback: the agent
//     listens there too and hands those listeners over with the proxy's,
//     and the host connects each connection to the service (a
//     [Forwarder]); the rest of the jail's loopback is the session's.
//   - Unix sockets: in a jail with a network namespace of its own, the
//     commands reach the unix sockets their session binds (in /tmp, and
//     elsewhere where the file system numbers inodes in 32 bits) and no
//     other: every connect, sendmsg, sendmmsg and sendto with an address
//     is made by the host for the command (a seccomp user notification),
//     which refuses with EACCES a path that does not lead to a socket
//     bound in the jail's network namespace, before the socket's owner
//     hears of it. With NetworkOn the host's sockets outside the hidden
//     paths are reachable, as its loopback is. Where the kernel cannot
//     supervise (before Linux 5.19), such a jail refuses socket(AF_UNIX).
//   - System calls: a seccomp filter refusing ptrace, process_vm_*,
//     io_uring, bpf, perf_event_open, userfaultfd, the keyring, mount and
//     namespace calls, modules, kexec, TIOCSTI and other architectures.
//   - Files: the host's root read-only; writable: the session's workspace,
//     a private /tmp in memory (of [Limits].Tmp bytes) removed when the
//     session ends, the tool caches in the home directory ([CachePaths],
//     unless [Policy].LockCaches) and [Policy].Writable; read-only inside
//     the workspace: .git as a whole but what git needs to commit, nested
//     repositories and [WorkspaceReadOnly]; hidden: the credentials of
//     [HiddenHomePaths], the system paths of [HiddenSystemPaths] and
//     [Policy].Hidden. Landlock rules, on the agent's thread that starts
//     every shell, allow writes only where the binds do.
//   - Limits: each session's memory, processes and CPU share, in cgroups
//     of its own where the host lets them apply ([Limits]).
//   - Lifetime: the agent exits when the host's end of its socket closes,
//     and bwrap dies with its parent, so no jail outlives the server.
//     [CleanStale] removes what a killed server left on disk.
//
// # Warm starts
//
// With [Options].Warm, the executor keeps that many jails (in the
// Landlock layer, agents) started and idle, with nothing of any session's
// in them, so that a session's first call waits for no jail to start. A
// session claims one: in a jail, the host clones the session's workspace,
// git directories, read-only paths and spill directory in its own mount
// namespace and attaches them in the jail's, from a thread that enters it
// (which takes a server run as root); the agent then applies the rest
// of its configuration (Landlock, deny rules, fence, listeners) as a
// fresh agent does at its start. A claimed jail serves that session alone
// and ends with it; the pool is refilled in the background.
// [Executor.PoolStatus] reports it for readiness checks.
//
// # The Landlock layer
//
// Where bwrap cannot make a jail (user namespaces blocked: Ubuntu's
// AppArmor restriction, a container's seccomp profile, a jail within a
// jail), [LayerAuto] falls back to [LayerLandlock]: the same agent, run
// directly as a subreaper of the host, gives up every capability,
// installs the same seccomp filter and restricts itself with Landlock
// before it starts any shell (writes to the workspace, the caches, a
// TMPDIR of the session's own and the harmless devices; reads of all but
// the hidden paths; signals and abstract sockets within the session; no
// TCP with [NetworkOff]). It gives commands no /proc, /tmp or network of
// their own, and leaves .git and editor files in the workspace writable;
// [Executor.Layer] says which layer an executor is, and why.
//
// # Use
//
// A program that makes an Executor calls [Main] first thing in main (a
// test binary, in TestMain). [New] runs a command in a throwaway jail and
// fails with an error matching [ErrUnavailable] where no layer can work
// here (neither bwrap with user namespaces nor Landlock, or not Linux),
// saying what to install or enable. [Executor.EndOwner] ends a session's jails; Close ends them all.
//
// What the sandbox does not protect against is listed in the README
// ("The sandbox").
package sandbox
