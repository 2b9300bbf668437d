//go:build !linux

package k8s

// bootID is "" where it cannot be read: no pod is judged an orphan.
func bootID() string { return "" }

// processStart is 0 where it cannot be read.
func processStart(int) uint64 { return 0 }

// pidNamespace is "" where it cannot be read.
func pidNamespace() string { return "" }
