//go:build !linux

package local

import "errors"

// spawnGuarded fails: checking every exec needs Linux.
func spawnGuarded(*SpawnRequest) (Process, error) {
	return nil, errors.New("deny rules enforced at exec need Linux")
}
