package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/remote"
)

// remoteFlags choose a remote executor: commands run on the far side of a
// stream.
type remoteFlags struct {
	cmd       string // a program whose stdio is the stream
	workspace string // the sessions' directory on the far side
}

func (f *remoteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cmd, "executor-cmd", "", "run commands through `dsh-bash executor` on the far side of this program's stdio: 'ssh box dsh-bash executor', 'docker exec -i box dsh-bash executor', 'kubectl exec -i pod -- dsh-bash executor' (split like shell words)")
	fs.StringVar(&f.workspace, "remote-workspace", "", "the sessions' directory on the far side (default: the directories given here, unchanged)")
}

func (f *remoteFlags) active() bool { return f.cmd != "" }

// dialTimeout bounds the first connection to the far side.
const dialTimeout = 30 * time.Second

// executor connects to the far side.
func (f *remoteFlags) executor(ctx context.Context, stderr io.Writer) (bash.Executor, error) {
	argv, err := shell.Fields(f.cmd, func(string) string { return "" })
	if err != nil {
		return nil, fmt.Errorf("--executor-cmd: %w", err)
	}
	if len(argv) == 0 {
		return nil, errors.New("--executor-cmd: no command")
	}
	cmd := &remote.Command{Argv: argv, Stderr: stderr}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return remote.Dial(ctx, cmd.Dial, &remote.Options{Host: argv[0], Workspace: f.workspace})
}
