//go:build linux

package k8s

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/internal/k8stest"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/servetest"
	"github.com/dshgo/dsh/internal/testwait"
)

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "executor" {
		// Run in a pod as "dsh-bash executor CONFIG" (uploaded, or from
		// the host's /tmp): serve a local executor with the suite's knobs.
		os.Exit(serve(os.Args[2]))
	}
	if cfg := os.Getenv(holdEnv); cfg != "" {
		os.Exit(hold(cfg))
	}
	proctest.QuickRaceExit()
	proctest.RaiseParallel(4)
	goleak.VerifyTestMain(m, k8stest.IgnoreIdleConnections(), k8stest.IgnoreCutHeartbeats(),
		goleak.Cleanup(func(code int) {
			servetest.RemoveFarside()
			if err := k8stest.RemoveSharedNamespace(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			os.Exit(code)
		}))
}

func serve(cfg string) int {
	return servetest.Main(cfg, func(ctx context.Context, rwc io.ReadWriteCloser, e bash.Executor, containment string) error {
		return remote.Serve(ctx, rwc, e, &remote.ServeOptions{Containment: containment})
	})
}

// template is the test pods' template: the host's /usr and /tmp (where
// this test binary and the suite's directories are), and its pid
// namespace, so that the suite sees the pods' processes as the host's.
func template(t testing.TB) *corev1.Pod {
	p := k8stest.Template(t)
	p.Spec.HostPID = true
	c := &p.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "GORACE", Value: os.Getenv("GORACE")})
	return p
}

// serveArgv runs a far side with the suite's knobs in a pod: the plain
// build of internal/servetest/farside, which starts for a fraction of the
// CPU of this race-built test binary (bash/remote's own tests check the
// far side's code for races).
func serveArgv(t testing.TB, c bashtest.Config) []string {
	return []string{servetest.Farside(t), "executor", servetest.Config{Config: c, SpillDir: t.TempDir()}.Encode()}
}

// cluster is a test's cluster and a namespace of its own.
type cluster struct {
	config *rest.Config
	ns     string
}

// newCluster is the cluster and the namespace the package's tests share
// (k8stest.SharedNamespace): their executors' instances tell their pods
// apart.
func newCluster(t testing.TB) cluster {
	return cluster{config: k8stest.Config(t), ns: k8stest.SharedNamespace(t)}
}

// ownCluster is the cluster and a namespace of the test's own: for a
// quota, and for orphans, which an executor's start deletes from every
// instance in its namespace.
func ownCluster(t testing.TB) cluster {
	return cluster{config: k8stest.Config(t), ns: k8stest.Namespace(t)}
}

// executor makes an Executor in the test's namespace whose pods serve
// with the suite's knobs c; edit changes its options.
func (k cluster) executor(t testing.TB, c bashtest.Config, edit func(*Options)) *Executor {
	t.Helper()
	opts := &Options{
		Config: k.config, Namespace: k.ns, Template: template(t),
		Command: serveArgv(t, c), Stderr: os.Stderr, Instance: randomName(), MaxTasks: c.MaxTasks,
		Logf: t.Logf,
	}
	if edit != nil {
		edit(opts)
	}
	e, err := testwait.Reply("k8s.New", func(ctx context.Context) (*Executor, error) { return New(ctx, opts) })
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs cmd in owner's session, which may wait for its pod to start.
func run(e bash.Executor, owner, cmd string) (bash.RunResult, error) {
	return testwait.ReplyWithin(k8stest.StartLimit, "a run of "+cmd, func(ctx context.Context) (bash.RunResult, error) {
		spec, err := e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: owner})
		if err != nil {
			return bash.RunResult{}, err
		}
		return e.Run(ctx, spec)
	})
}
