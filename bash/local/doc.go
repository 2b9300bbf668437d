// Package local is the bash executor that runs commands as subprocesses of
// this program. It implements bash.Executor; see package bash for the rules
// every executor keeps.
//
// # Spawning
//
// Each command runs as `bash --noprofile --norc -c COMMAND` in its own
// session (a new process group with no controlling terminal, so a program
// that opens /dev/tty fails at once instead of waiting for a person), with
// stdin on /dev/null. A command too long for one argument (Linux refuses
// 128 KiB or more), or one that does not fit beside a large environment,
// is passed in a sealed memfd (elsewhere, an unlinked 0600 file in the
// private spill directory) on fd 3 instead, which bash reads whole and
// evaluates with fd 3 closed, so no child inherits it; exit codes, `exit N`,
// heredocs, traps and line numbers are as with -c (only a syntax error's
// message lacks the "-c: line N:" part). A command holding a NUL byte cannot be a bash
// string: Resolve, Run and Start return a *bash.CommandError matching
// bash.ErrNULInCommand and start nothing.
//
// # Environment
//
// The environment is the executor's own (or Options.BaseEnv) scrubbed, plus
// NO_COLOR=1 TERM=dumb PAGER=cat GIT_PAGER=cat GIT_TERMINAL_PROMPT=0, plus
// Options.Env, which is taken as given. The scrub drops:
//
//   - always, since they change what bash runs: BASH_ENV, ENV, SHELLOPTS,
//     BASHOPTS and every BASH_FUNC_* (an exported function can replace any
//     command, echo included);
//   - unless Options.AllowEnv names them, variables that look like
//     credentials: a name that contains, in any case, KEY, SECRET, TOKEN,
//     PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, PRIVATE, COOKIE, SESSION,
//     AUTHORIZATION or OAUTH; a name one of whose underscore-separated parts
//     is PASS, PAT, AUTH, PEM, DSN, PWD, JWT, CREDS or BEARER (GITHUB_PAT,
//     DB_DSN and MYSQL_PWD go; PATH, PWD and GIT_AUTHOR_NAME stay);
//     SSH_AUTH_SOCK and SSHPASS; and any variable whose value holds a URL
//     with a password (postgres://u:pw@host/db), or an http(s) URL with a
//     user (https://TOKEN@github.com), as net/url reads it. PWD,
//     DBUS_SESSION_BUS_ADDRESS, XDG_SESSION_* and TOKENIZERS_PARALLELISM are
//     kept (unless their value holds such a URL). The exact rules are in
//     env.go.
//
// AllowEnv cannot name the shell-control variables: New refuses it.
//
// # Containment and killing
//
// On Linux, where the process may create a cgroup v2 directory under its own
// cgroup (as root, or in a delegated subtree), the executor makes one
// directory for itself and a leaf in it for every command, and the shell is
// cloned straight into its leaf (CLONE_INTO_CGROUP). A leaf holds every
// descendant, even one that calls setsid and leaves the process group; its
// cgroup.events says when the last one has exited, and cgroup.kill kills
// all of them at once. Executor.Containment then reports "cgroup". The
// executor's directory is named dsh-PID-START-RANDOM (see CleanStale).
//
// Empty leaves are reused (making and removing one per command would cost
// about 5 % of a short command's run). A leaf whose cgroup.kill was ever
// written kills every process later cloned into it at birth (Linux 6.18),
// and commands can write to any leaf's cgroup.kill, their own or another's,
// busy or idle, without a trace. So a leaf the executor killed is never
// reused, and every spawn checks that the shell got to exec (its
// PF_FORKNOEXEC flag in /proc/PID/stat is clear): a shell killed before it
// ran anything is reaped, its leaf and every free leaf are dropped, and the
// shell is started again in a new leaf, so the command runs once, as asked.
// Where /proc cannot tell, the leaf is not reused.
//
// Elsewhere, or with Options.Containment set to ContainProcessGroup, the
// command's process group stands in for the leaf: killing signals the group,
// and emptiness is found by scanning /proc for live members (zombies do not
// count), with a backoff, since the kernel has no event for it. A descendant
// that calls setsid escapes a process group: it is neither waited for nor
// killed.
//
// A timeout, a cancelled context, Kill and Close all stop a command the same
// way: SIGTERM to every process of the command, then SIGKILL after
// Options.Grace (3 s). The signal a result reports is the one that ended the
// shell. If, Options.ReapBound (2 s) after the SIGKILL, the command is still
// not gone (a process stuck in the kernel, or one beyond the cgroup or
// process group holding the output pipes), its pipes are closed and it is
// counted as ended, so a stop always returns.
//
// # Output
//
// Each stream keeps its last Options.MaxOutputBytes (64000) in memory. On the
// first overflow a spill file is made that holds the complete stream.
//
// Spill files live in a private directory (0700) made for the executor in
// Options.SpillDir, named dsh-spill-PID-START-RANDOM (see CleanStale), and
// in it one private directory (0700) per owner token, named after a short
// hash of the token (never the token itself; "no-owner" for none). The
// executor's directory is opened once (O_DIRECTORY|O_NOFOLLOW) and checked
// to be ours (a directory owned by our uid, mode 0700), and so is each
// owner's; every file is then created (0600, a random name,
// O_CREAT|O_EXCL|O_NOFOLLOW) and removed (unlinkat) through the open
// directory, never by path. A command can rename our directories or put a
// symlink in their place: our writes and removals still go to our own
// directories, and nothing is written or removed where the symlink points.
// Output.SpillPath is the absolute path of the file (executor directory,
// owner directory, file name), for the model to read.
//
// A spill file that would pass Options.MaxSpillBytes, or the executor's
// Options.SpillBudget, or that fails to write or close, is withdrawn:
// removed, and no longer named; before that, the oldest complete spill files
// are evicted to stay within the budget. Spill files are removed with their
// task when it is forgotten, and on Close, which then removes the owner
// directories and the executor's (a directory found replaced is left alone,
// and Close says so), unless Options.KeepSpillFiles is set: then complete
// files stay, in a directory named dsh-spill-kept-RANDOM (Executor.SpillDir),
// which CleanStale never removes and CleanKept removes once nothing has been
// written to it for the time its caller gives. Pipes are always drained, so memory stays bounded whatever
// a command prints.
//
// # Leftovers
//
// When a foreground command's shell exits but processes it started live on
// (`server &`), Run waits Options.DrainDelay (250 ms) for them, then returns
// what was printed and adopts them as a background task of the same owner
// (RunResult.Adopted), which ReadOutput, Kill and Close handle like any
// other; it completes when the last of them exits, with the shell's exit
// code. If the owner is at its task limit they are killed instead
// (RunResult.LeftoversKilled). Only live processes are adopted: a command
// that has ended whole, but whose output is still being read when the
// delay is over (a loaded machine), is waited for (up to ReapBound more).
//
// # After a crash
//
// An executor whose process is killed (SIGKILL) leaves its cgroup directory,
// with any processes still in it, and its spill directory behind. Both names
// carry the pid and start time of the process that made them
// (dsh-PID-START-…, dsh-spill-PID-START-…), so CleanStale, called when a
// program starts, can kill and remove exactly those whose process is gone,
// even where pids have been reused, and never a live executor's.
package local
