package main

import (
	"context"
	"fmt"
	"io"

	"github.com/dshgo/dsh/mcpserver"
)

// mcpCmd serves the tools over MCP: stdio by default, streamable HTTP with
// --http. It returns when the client goes away (stdin EOF, or a write to
// stdout fails), or on SIGINT, SIGTERM or SIGHUP (which, with --audit-log,
// reopens the log instead), after aborting every call in flight and once
// every command it started is gone.
func mcpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, ef := newFlags("mcp", stderr)
	cwd := fs.String("cwd", "", "working directory of sessions whose client has no roots (default: the current directory)")
	hf := registerHTTPFlags(fs)
	of := registerObserveFlags(fs)
	ef.audit.register(fs)
	if !refuseTokenArg(args, stderr) {
		return 2
	}
	if code, done := parseNoArgs(fs, args, stdout, stderr); done {
		return code
	}
	if !hf.check(fs, stderr) || !of.check(stderr) || !checkCwd("mcp", *cwd, stderr) {
		return 2
	}
	of.http, ef.observing = hf.addr != "", of
	if err := hf.prepare(); err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 1
	}
	defer hf.done()
	ef.sandbox.hidden = append(ef.sandbox.hidden, hf.serverPaths()...)
	opts := ef.options()
	opts.Cwd = *cwd
	defer ef.audit.close("mcp", stderr) // last: the executor's end is recorded too
	s, code := ef.executor(ctx, "mcp", opts, stderr)
	if code != 0 {
		return code
	}
	defer closeExecutor("mcp", s, stderr)
	if err := ef.audit.open(ctx, "mcp", stderr); err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 1
	}
	if err := hf.refuseOpenPort(s.OnNetwork()); err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 2
	}
	perm, err := s.GateOptions("mcp")
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 2
	}
	// The server asks its users about other hosts (Options.Egress).
	srv, err := mcpserver.New(s.Executor(), &mcpserver.Options{Cwd: *cwd, MaxResultChars: ef.maxResultChars, Logger: warnLogger(stderr), Version: version(),
		Instructions: s.Instructions(true), CannotAskInstructions: s.Instructions(false),
		Permissions: perm, Unsandboxed: s.OffersEscape(), Sandbox: s.Facts(), Egress: s.Proxy(),
		Observe: s.Observe(), Containment: s.Containment()})
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 2
	}
	defer srv.Close()
	stopMetrics, err := of.serveMetrics(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 1
	}
	defer stopMetrics()
	hf.metrics = of.handler()
	if hf.addr == "" {
		sayStdio(stdin, stderr)
		err = srv.ServeStdio(ctx, stdin, pollable(stdout), nil)
	} else {
		hf.mergeConfig(fs, &ef.http)
		err = serveHTTP(ctx, srv, hf, s.Ready, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 1
	}
	return 0
}

// sayStdio tells a person who started dsh-bash mcp on a terminal, where it
// would otherwise wait in silence, what it does and how to stop it. A
// client's pipe gets nothing.
func sayStdio(stdin io.Reader, stderr io.Writer) {
	if isTerminal(stdin) {
		fmt.Fprintln(stderr, "dsh-bash mcp: serving MCP on stdin and stdout, for an MCP client that starts this command (claude mcp add dsh-bash -- dsh-bash mcp); Ctrl-D or Ctrl-C stops it")
	}
}
