//go:build !linux

package local

import "context"

// CleanStale removes what executors left behind when their process died
// without Close. Off Linux there is no start time to tell a dead owner from
// a reused pid, so directories carry no stamp and it removes nothing.
func CleanStale(ctx context.Context, spillParent string) (removed []string, err error) {
	return nil, nil
}
