//go:build linux

// Command farside is the far side of the remote executors' tests, built
// without the race detector: `farside executor CONFIG` serves the local
// executor that CONFIG (servetest.Config.Encode) describes on its stdin
// and stdout. A race-built test binary in its place costs several times
// the CPU at each start (the Kubernetes tests start one per exec stream);
// bash/remote's own tests keep the race-built far side.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/internal/servetest"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "executor" {
		fmt.Fprintln(os.Stderr, "usage: farside executor CONFIG")
		os.Exit(2)
	}
	os.Exit(servetest.Main(os.Args[2], func(ctx context.Context, rwc io.ReadWriteCloser, e bash.Executor, containment string) error {
		return remote.Serve(ctx, rwc, e, &remote.ServeOptions{Containment: containment})
	}))
}
