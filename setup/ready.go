package setup

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/dshgo/dsh/bash"
)

// Ready checks that commands can run here, for a readiness probe (the
// HTTP server's /readyz through mcpserver.HTTPOptions.Ready): with the
// sandbox, it runs one command in a jail of its own, with a workspace of
// its own, as New checked before it returned, then ends that jail.
// Without the sandbox it returns nil: the local executor needs nothing
// that New did not find, and no far side of a remote executor (a pod, a
// host) is started for a probe. Calls may overlap; each has its own
// jail.
func (s *Setup) Ready(ctx context.Context) error {
	if s.se == nil {
		return nil
	}
	owner := "dsh-ready-check-" + strconv.FormatInt(s.readyChecks.Add(1), 10)
	ws, err := os.MkdirTemp("", "dsh-ready-check-")
	if err != nil {
		return fmt.Errorf("the sandbox check: %w", err)
	}
	defer os.RemoveAll(ws)
	spec, err := s.se.Resolve(ctx, bash.ExecRequest{Command: "exit 0", Owner: owner, Workspace: ws, Workdir: ws})
	if err == nil {
		var res bash.RunResult
		res, err = s.se.Run(ctx, spec)
		if err == nil && (res.ExitCode != 0 || res.Signal != "") {
			err = fmt.Errorf("a test command ended with exit code %d, signal %q", res.ExitCode, res.Signal)
		}
	}
	if eerr := s.se.EndOwner(ctx, owner); err == nil && eerr != nil {
		err = eerr
	}
	if err != nil {
		return fmt.Errorf("the sandbox check: %w", err)
	}
	return nil
}
