//go:build !linux

package sandbox

import (
	"context"
	"fmt"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/permission"
)

// Main returns at once: there is no agent outside Linux.
func Main() { mainCalled.Store(true) }

type jails struct{}

func newJails(*Options, []string, func(string) (string, func(), error), func(string) error) (*jails, error) {
	return nil, fmt.Errorf("%w: it needs Linux (bubblewrap, namespaces, seccomp)", ErrUnavailable)
}

func (*jails) spawn(context.Context, *local.SpawnRequest) (local.Process, error) {
	return nil, ErrUnavailable
}

func (*jails) endOwner(string) error  { return nil }
func (*jails) fallBack() bool         { return false }
func (*jails) kind() Layer            { return LayerAuto }
func (*jails) whyNoJail() error       { return nil }
func (*jails) admit(string) error     { return nil }
func (*jails) close() error           { return nil }
func (*jails) poolStatus() (int, int) { return 0, 0 }

func (*Executor) startPool(context.Context, *Options, *permission.ExecRules, bool) error { return nil }

// CleanStale removes nothing: there are no jails outside Linux.
func CleanStale(ctx context.Context, tempDir string) (removed []string, err error) {
	return nil, nil
}
