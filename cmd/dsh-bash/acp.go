package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/dshgo/dsh/acpagent"
)

// acpCmd runs an ACP agent over stdio for an editor (Zed), driving an
// OpenAI-compatible chat-completions model with the shell tools. It returns
// when the editor closes stdin, or on SIGINT, SIGTERM or SIGHUP (which,
// with --audit-log, reopens the log instead), after every command it
// started is gone.
func acpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, ef := newFlags("acp", stderr)
	model := fs.String("model", "", "chat-completions `MODEL` (required), e.g. deepseek-chat or gpt-4.1")
	baseURL := fs.String("base-url", "", "OpenAI-compatible API base `URL` (default: $OPENAI_BASE_URL, else OpenAI's)")
	keyFile := fs.String("api-key-file", "", "read the API key from `PATH`, a file only you can read (default: $OPENAI_API_KEY)")
	yolo := fs.Bool("yolo", false, "run commands without asking the editor's permission")
	ef.audit.register(fs)
	if !refuseSecretArg(args, "acp", "api-key", "--api-key-file PATH or OPENAI_API_KEY", stderr) {
		return 2
	}
	if code, done := parseNoArgs(fs, args, stdout, stderr); done {
		return code
	}
	if *model == "" {
		fmt.Fprintln(stderr, "dsh-bash acp: --model is required")
		return 2
	}
	var key string // empty: $OPENAI_API_KEY
	if *keyFile != "" {
		var err error
		if key, err = readSecretFile(*keyFile, "API key file"); err != nil {
			fmt.Fprintf(stderr, "dsh-bash acp: %v\n", err)
			return 2
		}
	}
	if key == "" && os.Getenv("OPENAI_API_KEY") == "" {
		// A local server may need none; a hosted API fails at the first
		// prompt, which the editor shows far from here.
		fmt.Fprintln(stderr, "dsh-bash acp: no API key: set OPENAI_API_KEY or give --api-key-file PATH (a local model server may need none)")
	}
	defer ef.audit.close("acp", stderr) // last: the executor's end is recorded too
	s, code := ef.executor(ctx, "acp", ef.options(), stderr)
	if code != 0 {
		return code
	}
	defer closeExecutor("acp", s, stderr)
	if err := ef.audit.open(ctx, "acp", stderr); err != nil {
		fmt.Fprintf(stderr, "dsh-bash acp: %v\n", err)
		return 1
	}
	perm, err := s.GateOptions("acp")
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash acp: %v\n", err)
		return 2
	}
	// The agent asks its user about other hosts (Options.Egress).
	agent, err := acpagent.New(s.Executor(), &acpagent.Options{Instructions: s.Instructions(true), Model: *model, BaseURL: *baseURL, APIKey: key, Yolo: *yolo,
		MaxResultChars: ef.maxResultChars, Logger: warnLogger(stderr), Version: version(), Permissions: perm,
		Unsandboxed: s.OffersEscape(), Sandbox: s.Facts(), Egress: s.Proxy(), Observe: s.Observe(), Containment: s.Containment()})
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
