package main

import (
	"context"
	"fmt"
	"io"

	"github.com/dshgo/dsh/acpagent"
	"github.com/dshgo/dsh/bash/local"
	"github.com/openai/openai-go/v3/option"
)

// acpCmd runs an ACP agent over stdio for an editor (Zed), driving an
// OpenAI-compatible chat-completions model with the shell tools. It returns
// when the editor closes stdin, or on SIGINT or SIGTERM, after every
// command it started is gone.
func acpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, ef := newFlags("acp", stderr)
	model := fs.String("model", "", "chat-completions `MODEL` (required), e.g. deepseek-chat or gpt-4.1")
	baseURL := fs.String("base-url", "", "OpenAI-compatible API base `URL` (default: $OPENAI_BASE_URL, else OpenAI's)")
	apiKey := fs.String("api-key", "", "API `KEY` (default: $OPENAI_API_KEY)")
	yolo := fs.Bool("yolo", false, "run commands without asking the editor's permission")
	if !parseNoArgs(fs, args, stderr) {
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
	agent, err := acpagent.New(exec, &acpagent.Options{Model: *model, ClientOptions: copts, Yolo: *yolo, Logger: warnLogger(stderr), Version: version()})
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
