// Package permission decides whether a shell command may run: allow, ask
// or deny, by rules that match the argv prefixes of the simple commands
// it would run (git status, go test, npm run *).
//
// A command is read the way bash will read it (mvdan.cc/sh/v3/syntax),
// and every simple command in it is checked: each side of &&, ||, ;, |
// and &, subshells and groups, command and process substitutions,
// function bodies, strings run by eval, bash -c / sh -c, trap and alias,
// the command after wrappers such as env, command, builtin, exec, nohup,
// timeout, nice, xargs, sudo and find -exec; redirections that write
// outside the workspace (through symbolic links too) or connect through
// /dev/tcp; and, where keyword mode (set -k) may be on, NAME=VALUE words
// after a command's name, as the assignments bash makes them. Words are
// read as bash expands them: braces and brackets across a word's quoted
// parts ({--pre=x,"y"} is two words), a wrapper's clustered options
// (xargs -tI R cmd), and the options of set, shopt and a shell after
// quote removal (set -"k"); where bash may read the text otherwise than
// the parser (a here-document bash ends elsewhere, ! once history
// expansion may be on, # in an interactive shell, '…' within
// "${x:-…}"), or a cd may run before a relative write, it asks. Policy's
// ReadOnly adds built-in tables of programs and the options and operands
// with which they only read (readonly_tables.go). Deny wins over ask,
// which wins over allow. What
// cannot be known without running the command (a command name or an
// argument within a rule's prefix that comes from a variable, a glob or a
// substitution; a string for eval or bash -c that is not literal; an
// assignment to a variable that changes what runs, like PATH or
// LD_PRELOAD; a command name in non-ASCII letters; a command that does not
// parse) is ask, never allow.
//
// Deny and ask rules read a command in every form it can be written in:
// git's options before its subcommand hide it from none (git -c a=b push
// --force is git push --force; see CanonicalGit and DenyRule, which the
// exec-time check reads a real argv with). An allow rule does not cover
// the options of its program that run another program (git fetch
// --upload-pack, rg --pre, git -c core.pager=…) unless it names them, nor
// does an Unmatched of Allow; a value that is a command line is checked
// as one. Only variables known harmless may go into the environment of
// the programs a command runs (X=1 cmd, export, env, set -a); a write
// into a .git directory is asked about, as a write outside the workspace
// is.
package permission
