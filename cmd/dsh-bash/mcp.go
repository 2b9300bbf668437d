package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

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
	addr := fs.String("http", "", "serve streamable HTTP on `ADDR` (HOST:PORT, loopback unless --token) instead of stdio")
	token := fs.String("token", "", "with --http: require `TOKEN` as a bearer token on every request")
	idle := fs.Duration("idle-timeout", time.Hour, "with --http: end a session (and kill its tasks) after it is idle this long; 0 never")
	if !parseNoArgs(fs, args, stderr) {
		return 2
	}
	if *token != "" && *addr == "" {
		fmt.Fprintln(stderr, "dsh-bash mcp: --token goes with --http")
		return 2
	}
	listen := ""
	if *addr != "" {
		var err error
		if listen, err = mcpserver.ListenAddr(*addr, *token != ""); err != nil {
			fmt.Fprintf(stderr, "dsh-bash mcp: %v\n", err)
			return 2
		}
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
	if listen == "" {
		err = srv.Run(ctx, stdioTransport(stdin, stdout))
	} else {
		err = serveHTTP(ctx, srv, listen, &mcpserver.HTTPOptions{Token: *token, SessionTimeout: *idle}, stderr)
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

func serveHTTP(ctx context.Context, srv *mcpserver.Server, addr string, opts *mcpserver.HTTPOptions, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.HTTPHandler(opts), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "dsh-bash mcp: serving streamable HTTP on http://%s/\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Close() // ends the sessions' long-lived streams, so Shutdown can finish
	if err := hs.Shutdown(shut); err != nil {
		hs.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
