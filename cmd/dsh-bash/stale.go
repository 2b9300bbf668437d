package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
)

// staleTimeout bounds the start-up clean-up of what a killed dsh-bash left.
const staleTimeout = 10 * time.Second

// sweepStale removes what dsh-bash processes that died without cleaning up
// (SIGKILL) left behind: their cgroups, spill directories (in spillDir, ""
// for the system's temporary directory), jails' directories and token
// directories. It says on stderr what it removed, and what it could not.
func sweepStale(ctx context.Context, name, spillDir string, stderr io.Writer) {
	cleanCtx, cancel := context.WithTimeout(ctx, staleTimeout)
	removed, err := local.CleanStale(cleanCtx, spillDir)
	jails, jerr := sandbox.CleanStale(cleanCtx, "")
	cancel()
	tokens, terr := cleanStaleTokenDirs("")
	removed, err = slices.Concat(removed, jails, tokens), errors.Join(err, jerr, terr)
	for _, dir := range removed {
		fmt.Fprintf(stderr, "dsh-bash %s: removed %s, left behind by a dsh-bash that was killed\n", name, dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash %s: cleaning up after killed dsh-bash processes: %v\n", name, err)
	}
}
