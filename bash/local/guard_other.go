//go:build !linux

package local

import (
	"errors"

	"github.com/dshgo/dsh/bash/execguard"
	"github.com/dshgo/dsh/permission"
)

// spawnGuarded fails: checking every exec needs Linux.
func spawnGuarded(*SpawnRequest) (Process, error) {
	return nil, errors.New("deny rules enforced at exec need Linux")
}

// ExecCheck is the execguard check of rules (Linux only: it refuses
// nothing elsewhere, where nothing is traced).
func ExecCheck(*permission.ExecRules) func(execguard.Exec) string {
	return func(execguard.Exec) string { return "" }
}
