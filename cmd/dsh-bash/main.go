// Command dsh-bash serves the model-facing shell tools bash, bash_output,
// bash_kill, bash_input and bash_tasks.
//
//	dsh-bash mcp [--cwd DIR] [--http ADDR [--token-file PATH | --no-auth]] [--metrics ADDR] [--audit-log PATH] [executor flags]
//	dsh-bash acp --model MODEL [--base-url URL] [--api-key-file PATH] [--yolo] [--audit-log PATH] [executor flags]
//	dsh-bash run [--cwd DIR] [--workdir DIR] [--timeout-ms N] [executor flags] -- COMMAND
//	dsh-bash executor [executor flags]
//	dsh-bash schema
//	dsh-bash doctor [--cwd DIR] [executor flags]
//	dsh-bash --version
//
// mcp serves the tools to an MCP client, over stdio or streamable HTTP;
// acp is an agent for an ACP editor (Zed) that drives an OpenAI-compatible
// model with the tools;
// run makes one bash call through the same tool layer a model uses and
// prints exactly the text the model would get; executor serves the
// executor on stdin and stdout for another dsh-bash's --executor-cmd or
// --remote; schema prints the five tool definitions as JSON; doctor
// prints what a session would get here (where commands run, the sandbox
// and why, its layers, network and paths). Executor flags such as
// --default-timeout-ms, --max-timeout-ms, --max-output-bytes and
// --max-result-chars are listed by dsh-bash without arguments.
//
// SIGINT, SIGTERM and SIGHUP abort every call in flight and stop every
// command before dsh-bash exits, save that dsh-bash mcp --http drains on
// the first SIGTERM (--drain-timeout), and that with --audit-log SIGHUP
// reopens the log (logrotate); a closed stdout is an error to clean up
// after, not a death by SIGPIPE. At start, the cgroups, spill directories
// and token directories of a dsh-bash that was killed (SIGKILL) are
// removed, and the process makes itself non-dumpable, so that its commands
// cannot read its memory or environment (see harden).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/dshgo/dsh/bash/sandbox"
)

func main() {
	sandbox.Main() // a jail's agent is this binary, started again
	if err := harden(); err != nil {
		fmt.Fprintf(os.Stderr, "dsh-bash: cannot harden the process (non-dumpable, no inherited descriptors for commands): %v\n", err)
		os.Exit(1)
	}
	// A write to a closed pipe must fail with EPIPE (the client is gone:
	// clean up and exit) rather than kill the process before its cleanup.
	// Catching SIGPIPE, unlike ignoring it, leaves it at its default in the
	// commands dsh-bash runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// client-go logs what its own callers are told anyway (a stream that
	// ended, a copy that failed) through klog, to stderr by default: the
	// Kubernetes executor reports its errors itself.
	klog.SetLogger(logr.Discard())
	ctx, stop := notifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  dsh-bash mcp [--cwd DIR] [--http ADDR [HTTP flags]] [--metrics ADDR] [--audit-log PATH] [executor flags]
  dsh-bash acp --model MODEL [--base-url URL] [--api-key-file PATH] [--yolo] [--audit-log PATH] [executor flags]
  dsh-bash run [--cwd DIR] [--workdir DIR] [--timeout-ms N] [executor flags] -- COMMAND
  dsh-bash executor [executor flags]
  dsh-bash schema
  dsh-bash doctor [--cwd DIR] [executor flags]   what a session gets here
  dsh-bash --version

HTTP flags (ADDR is HOST:PORT, loopback unless a token guards it, or unix:PATH):
  --token-file PATH        the bearer token required, read from a file only you
                           can read (or set DSH_BASH_TOKEN); without either, one
                           is generated into a 0600 file named on stderr
  --no-auth                no token (loopback or unix socket only)
  --idle-timeout D         end a session idle this long (default 1h)
  --session-grace D        end a session whose client has gone (default 2m)
  --max-sessions N         cap on open sessions (default 64)
  --drain-timeout D        on SIGTERM, refuse new sessions and let the calls
                           in flight finish for up to D (default 30s), then
                           end; a second SIGTERM or SIGINT ends at once

operator flags (see docs/operations.md):
  --metrics ADDR           (mcp) serve Prometheus metrics at /metrics on ADDR,
                           without a token: loopback HOST:PORT or unix:PATH
                           (--http serves them too, behind its token)
  --audit-log PATH         (mcp, acp) a JSON line per session, call, network
                           decision and jail start, without output, secrets
                           redacted; SIGHUP reopens it (logrotate) instead of
                           stopping dsh-bash

executor flags:
  --default-timeout-ms N   timeout of a call that sets none (default 120000)
  --max-timeout-ms N       cap on any call's timeout (default 600000)
  --max-output-bytes N     bytes of each stream kept in memory (default 64000)
  --max-result-chars N     characters of one result's text, both streams and
                           markers (default 30000)
  --env NAME=VALUE         set a variable for the commands (repeatable)
  --grace-ms N, --drain-delay-ms N, --max-tasks N, --max-tasks-per-session N
  --input-probe=false      bash_input answers after 200 ms of quiet, not as
                           soon as the program waits for input again
  --config PATH            configuration file (default ~/.config/dsh/config.json)
  --executor-cmd CMD       run commands on the far side of CMD's stdio, where
                           dsh-bash executor serves: 'ssh box dsh-bash executor'
  --remote URL             run commands on ssh://[user@]host[:port][/workspace]
                           over built-in SSH (repeat either flag: a fleet), or
                           in a Kubernetes pod per session: k8s://NAMESPACE
  --k8s-template FILE      the pod template of a k8s:// remote (required)
  --k8s-warm N             started pods kept ready for new sessions
  --kubeconfig FILE        default $KUBECONFIG, ~/.kube/config, in-cluster
  --remote-workspace DIR   the sessions' directory on the far side
  --remote-command CMD     what --remote runs there (default 'dsh-bash executor')
  --remote-upload          copy this binary to --remote hosts (or pods) without
                           dsh-bash

sandbox flags (see README):
  --sandbox MODE           auto (a jail, else the Landlock layer, else none,
                           with a warning), on, jail, landlock or off
  --sandbox-network on|off|allowlist, --sandbox-writable PATH,
  --sandbox-read-only PATH, --sandbox-hide PATH, --sandbox-lock-caches,
  --sandbox-memory SIZE, --sandbox-pids N, --sandbox-tmp SIZE,
  --sandbox-escape ask|off
  --sandbox-warm N         started jails kept ready for new sessions
  --allow-domain HOST      with the allowlist: a host commands may reach
  --deny-domain HOST       one they may never reach (each repeatable)
  --default-domains=false  drop the built-in registries and source hosts

permission flags (mcp, acp, run; see README):
  --allow PATTERN          run commands matching it without asking: 'npm run *'
  --ask PATTERN            ask the user first: 'git push'
  --deny PATTERN           never run them: 'git push --force' (any spelling)
                           (each repeatable)
  --default allow|ask      what a command no rule matches does: by default
                           allow under mcp and run (the MCP client asks its
                           user), ask under acp; commands known to only read
                           run either way, and what cannot be known
                           statically is asked about

'dsh-bash COMMAND -h' lists a command's flags.
`

// cli runs one dsh-bash invocation and returns its exit code.
func cli(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "mcp":
		return mcpCmd(ctx, args[1:], stdin, stdout, stderr)
	case "acp":
		return acpCmd(ctx, args[1:], stdin, stdout, stderr)
	case "run":
		return runCmd(ctx, args[1:], stdin, stdout, stderr)
	case "schema":
		return schemaCmd(args[1:], stdout, stderr)
	case "executor":
		return executorCmd(ctx, args[1:], stdin, stdout, stderr)
	case "doctor":
		return doctorCmd(ctx, args[1:], stdout, stderr)
	case "-V", "--version", "version":
		fmt.Fprint(stdout, versionLine())
		return 0
	case "-h", "--h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "dsh-bash: unknown command %q\n\n%s", args[0], usage)
	return 2
}
