package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/dshgo/dsh/acpagent"
	"github.com/dshgo/dsh/bash/local"
	"github.com/openai/openai-go/v3/option"
)

// acpCmd runs an ACP agent over stdio for an editor (Zed), driving an
// OpenAI-compatible chat-completions model with the shell tools. It returns
// when the editor closes stdin, or on SIGINT or SIGTERM, after every
// command it started is gone.
func acpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("acp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ef execFlags
	ef.register(fs)
	model := fs.String("model", "", "chat-completions `MODEL` (required), e.g. deepseek-chat or gpt-4.1")
	baseURL := fs.String("base-url", "", "OpenAI-compatible API base `URL` (default: $OPENAI_BASE_URL, else OpenAI's)")
	apiKey := fs.String("api-key", "", "API `KEY` (default: $OPENAI_API_KEY)")
	yolo := fs.Bool("yolo", false, "run commands without asking the editor's permission")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dsh-bash acp: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *model == "" {
		fmt.Fprintln(stderr, "dsh-bash acp: --model is required")
		return 2
	}
	var copts []option.RequestOption
	if *baseURL != "" {
		copts = append(copts, option.WithBaseURL(*baseURL))
	}
	if *apiKey != "" {
		copts = append(copts, option.WithAPIKey(*apiKey))
	}
	exec, err := local.New(ef.options())
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash acp: %v\n", err)
		return 2
	}
	defer exec.Close()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	agent, err := acpagent.New(exec, &acpagent.Options{Model: *model, ClientOptions: copts, Yolo: *yolo, Logger: logger, Version: version()})
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash acp: %v\n", err)
		return 2
	}
	if err := agent.Serve(ctx, stdout, stdin); err != nil {
		fmt.Fprintf(stderr, "dsh-bash acp: %v\n", err)
		return 1
	}
	return 0
}
