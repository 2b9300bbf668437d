package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/sandbox"
)

// staleTimeout bounds the start-up clean-up of what a killed dsh-bash left.
const staleTimeout = 10 * time.Second

// keptLife is how long the spill files run keeps after it exits stay: the
// first dsh-bash to start once nothing has been written to them for that
// long removes them.
const keptLife = 24 * time.Hour

// sweepStale removes what dsh-bash processes that died without cleaning up
// (SIGKILL) left behind: their cgroups, spill directories (in spillDir, ""
// for the system's temporary directory), jails' directories and token
// directories; and the spill files run kept that are past keptLife. It
// says on stderr what it removed, and what it could not.
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
	kept, err := local.CleanKept(spillDir, keptLife)
	for _, dir := range kept {
		fmt.Fprintf(stderr, "dsh-bash %s: removed %s, the output a dsh-bash run kept, unused for %v\n", name, dir, keptLife)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dsh-bash %s: removing the output dsh-bash run kept: %v\n", name, err)
	}
}

// sayKept says on stderr where the spill files exec kept after Close are,
// if it kept any, and until when.
func sayKept(exec bash.Executor, stderr io.Writer) {
	sd, ok := exec.(interface{ SpillDir() string }) // local and sandbox executors
	if !ok || sd.SpillDir() == "" {
		return
	}
	if _, err := os.Stat(sd.SpillDir()); err != nil {
		return // Close removed it: it kept nothing
	}
	until := time.Now().Add(keptLife).Format("2006-01-02 15:04")
	fmt.Fprintf(stderr, "dsh-bash run: the full output stays in %s until about %s (%v; the first dsh-bash to start after that removes it)\n", sd.SpillDir(), until, keptLife)
}
