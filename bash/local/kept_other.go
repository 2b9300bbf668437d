//go:build !unix

package local

import "time"

// CleanKept removes old directories of kept spill files; without the
// directory descriptors it removes them through, it removes nothing here.
func CleanKept(spillParent string, olderThan time.Duration) (removed []string, err error) {
	return nil, nil
}
