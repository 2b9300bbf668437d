// Command dsh-bash serves the model-facing shell tools bash, bash_output and
// bash_kill.
//
//	dsh-bash mcp [--cwd DIR] [--http ADDR [--token-file PATH | --no-auth]] [executor flags]
//	dsh-bash acp --model MODEL [--base-url URL] [--api-key KEY] [--yolo] [executor flags]
//	dsh-bash run [--workdir DIR] [--timeout-ms N] [executor flags] -- COMMAND
//	dsh-bash schema
//
// mcp serves the tools to an MCP client, over stdio or streamable HTTP;
// acp is an agent for an ACP editor (Zed) that drives an OpenAI-compatible
// model with the tools;
// run makes one bash call through the same tool layer a model uses and
// prints exactly the text the model would get; schema prints the three
// tool definitions as JSON. Executor flags: --default-timeout-ms,
// --max-timeout-ms, --max-output-bytes.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  dsh-bash mcp [--cwd DIR] [--http ADDR [HTTP flags]] [executor flags]
  dsh-bash acp --model MODEL [--base-url URL] [--api-key KEY] [--yolo] [executor flags]
  dsh-bash run [--workdir DIR] [--timeout-ms N] [executor flags] -- COMMAND
  dsh-bash schema

HTTP flags (ADDR is HOST:PORT, loopback unless a token guards it, or unix:PATH):
  --token-file PATH        the bearer token required, read from a file only you
                           can read (or set DSH_BASH_TOKEN); without either, one
                           is generated into a 0600 file named on stderr
  --no-auth                no token (loopback or unix socket only)
  --idle-timeout D         end a session idle this long (default 1h)
  --session-grace D        end a session whose client has gone (default 2m)
  --max-sessions N         cap on open sessions (default 64)

executor flags:
  --default-timeout-ms N   timeout of a call that sets none (default 120000)
  --max-timeout-ms N       cap on any call's timeout (default 600000)
  --max-output-bytes N     bytes of each stream kept in memory (default 64000)
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
		return runCmd(ctx, args[1:], stdout, stderr)
	case "schema":
		return schemaCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "dsh-bash: unknown command %q\n\n%s", args[0], usage)
	return 2
}
