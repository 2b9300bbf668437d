package setup_test

import (
	"context"
	"log"
	"os"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/mcpserver"
	"github.com/dshgo/dsh/setup"
)

// Example builds what dsh-bash mcp builds with its default settings (the
// sandbox's auto mode, no permission rules) and serves it over stdio, as
// dsh-bash mcp does. The program's main calls sandbox.Main first: each
// jail's agent is the program, started again.
func Example() {
	sandbox.Main()
	ctx := context.Background()
	s, err := setup.New(ctx, &setup.Config{Local: &local.Options{Cwd: "/path/to/workspace"}}, &setup.Options{Stderr: os.Stderr})
	if err != nil {
		log.Fatal(err) // a *setup.ConfigError for a configuration that cannot be
	}
	defer s.Close()
	for _, w := range s.Warnings() {
		log.Print(w) // no sandbox here, say
	}
	perm, err := s.GateOptions("mcp")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := mcpserver.New(s.Executor(), &mcpserver.Options{
		Cwd:                   "/path/to/workspace",
		Instructions:          s.Instructions(true),
		CannotAskInstructions: s.Instructions(false),
		Permissions:           perm,
		Unsandboxed:           s.OffersEscape(),
		Sandbox:               s.Facts(),
		Egress:                s.Proxy(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	if err := srv.ServeStdio(ctx, os.Stdin, os.Stdout, nil); err != nil {
		log.Fatal(err)
	}
}
