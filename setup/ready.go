package setup

import (
	"context"
	"fmt"
)

// Ready checks that commands can run here, for a readiness probe (the
// HTTP server's /readyz through mcpserver.HTTPOptions.Ready): with the
// sandbox, it runs one command in a jail of its own, with a workspace of
// its own, as New checked before it returned, then ends that jail
// (sandbox.Executor.Check: never one of the warm pool's); with a warm
// pool, a new session must find a warm jail ready. Without the sandbox
// it returns nil: the local executor needs nothing that New did not find,
// and no far side of a remote executor (a pod, a host) is started for a
// probe. Calls may overlap; each has its own jail.
func (s *Setup) Ready(ctx context.Context) error {
	if s.se == nil {
		return nil
	}
	if ready, target := s.se.PoolStatus(); target > 0 && ready == 0 {
		return fmt.Errorf("the sandbox's warm pool has none of its %d jails ready", target)
	}
	if err := s.se.Check(ctx); err != nil {
		return fmt.Errorf("the sandbox check: %w", err)
	}
	return nil
}

// PoolStatus is the sandbox's warm pool's state
// (sandbox.Executor.PoolStatus): how many warm jails are ready, and how
// many it keeps; 0, 0 without a pool (or without the sandbox).
func (s *Setup) PoolStatus() (ready, target int) {
	if s.se == nil {
		return 0, 0
	}
	return s.se.PoolStatus()
}
