package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/dshgo/dsh/bash"
)

// checkWorkspace asks exec whether sessions may work in ws, as a call
// there would: it returns the workspace the executor gives them (a remote
// one maps it to its own), or its refusal (a *bash.WorkspaceError: the
// sandbox refuses the home directory) or failure.
func checkWorkspace(ctx context.Context, exec bash.Executor, ws string) (string, error) {
	spec, err := exec.Resolve(ctx, bash.ExecRequest{Command: "true", Workspace: ws, Workdir: ws})
	if err != nil {
		return "", err
	}
	return spec.Workspace, nil
}

// refusalReason says, for the user, why the sandbox refuses a workspace;
// "" for an error that is no refusal.
func refusalReason(err error) string {
	var wse *bash.WorkspaceError
	if !errors.As(err, &wse) {
		return ""
	}
	if errors.Is(wse.Problem, bash.ErrWorkspaceHome) {
		return fmt.Sprintf("it is or holds your home directory %s, which sandboxed commands could then change", wse.Holds)
	}
	return fmt.Sprintf("it holds or lies in %s, where dsh-bash keeps its own files", wse.Holds)
}
