//go:build linux

package k8s

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/internal/k8stest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
)

const transcript = "../../../toolbash/toolbashtest/testdata/transcript.txtar"

// TestExecConformance runs the executor contract over exec streams into
// one pod: each executor of the suite is a stream of its own to a far
// side with its knobs (as the SSH suite shares one connection).
func TestExecConformance(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	e := k.executor(t, bashtest.Config{}, nil)
	r, err := testwait.ReplyWithin(k8stest.StartLimit, "a pod", func(ctx context.Context) (*ready, error) { return e.start(ctx, "conformance") })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.pods.delete(context.Background(), r.pod.Name); e.Close() })
	bashtest.Run(t, func(t *testing.T, c bashtest.Config) bash.Executor {
		x := e.exec(r.pod.Name, serveArgv(t, c))
		ex, err := testwait.Reply("hello over the exec stream", func(ctx context.Context) (*remote.Executor, error) {
			return remote.Dial(ctx, x.Dial, &remote.Options{Host: "pod " + r.pod.Name})
		})
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}, bashtest.SetsidEscapes(), // no cgroup in the pod: its executor holds a command by its process group
		// An exec stream the API server closed abruptly (websocket 1006)
		// ends a few seconds after Close, when client-go's streams do.
		bashtest.Teardown(15*time.Second))
}

// TestTranscript: the model reads the same bytes through a pod per
// session as through the local executor.
func TestTranscript(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	toolbashtest.Transcript(t, func(t *testing.T, c bashtest.Config) bash.Executor {
		return k.executor(t, c, nil)
	}, transcript, false)
	_ = os.Stderr
}
