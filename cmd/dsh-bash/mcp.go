package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpCmd serves the tools over MCP: stdio by default, streamable HTTP with
// --http. It returns when the client goes away (stdin EOF), or on SIGINT or
// SIGTERM, after every command it started is gone.
func mcpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, ef := newFlags("mcp", stderr)
	cwd := fs.String("cwd", "", "working directory of sessions whose client has no roots (default: the current directory)")
	hf := registerHTTPFlags(fs)
	if !refuseTokenArg(args, stderr) || !parseNoArgs(fs, args, stderr) || !hf.check(fs, stderr) {
		return 2
	}
	opts := ef.options()
	opts.Cwd = *cwd
	exec, err := local.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 2
	}
	defer exec.Close()
	srv, err := mcpserver.New(exec, &mcpserver.Options{Cwd: *cwd, Logger: warnLogger(stderr), Version: version()})
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 2
	}
	defer srv.Close()
	if hf.addr == "" {
		err = srv.Run(ctx, stdioTransport(stdin, stdout))
	} else {
		err = serveHTTP(ctx, srv, hf, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
		return 1
	}
	return 0
}

// stdioTransport is the SDK's stdio transport on the process's own stdin
// and stdout, else a transport on the given streams.
func stdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	if in == os.Stdin && out == os.Stdout {
		return &mcp.StdioTransport{}
	}
	return &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
