//go:build linux

package k8s

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/internal/servetest"
	"github.com/dshgo/dsh/internal/sshdtest"
	"github.com/dshgo/dsh/internal/testwait"
)

// benchExecutor is k.executor for a benchmark: closed with it, after which
// none of its pods may be left but those being deleted.
func (k cluster) benchExecutor(b *testing.B, c bashtest.Config, edit func(*Options)) *Executor {
	e := k.executor(b, c, edit)
	b.Cleanup(func() {
		if err := e.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
		for _, name := range livePods(b, e.client.Pods(e.opts.Namespace).List, labels.Set{LabelInstance: e.opts.Instance}) {
			b.Errorf("pod %s outlived Close", name)
		}
	})
	return e
}

// endOwner ends owner's session (and deletes its pod).
func endOwner(b *testing.B, e *Executor, owner string) {
	if err := testwait.Call("the end of session "+owner, func(ctx context.Context) error { return e.EndOwner(ctx, owner) }); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFirstCall measures a new session's first call (`true`,
// Resolve and Run as the tool makes them), in one loop with an executor
// that makes a pod for it and one that takes a warm pod (Warm 1, the pool
// refilled before each pair), so that machine noise hits both alike. It reports each one's median and 90th percentile, and the
// ratio of the medians. Each session ends (its pod deleted) untimed.
func BenchmarkFirstCall(b *testing.B) {
	k := newCluster(b)
	c := servetest.Defaults(b)
	fresh := k.benchExecutor(b, c, nil)
	warm := k.benchExecutor(b, c, func(o *Options) { o.Warm = 1 })
	first := func(e *Executor, owner string) time.Duration {
		t0 := time.Now()
		res, err := run(e, owner, "true")
		d := time.Since(t0)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("first call of %s: %v %+v", owner, err, res)
		}
		return d
	}
	var tFresh, tWarm []time.Duration
	for b.Loop() {
		b.StopTimer()
		waitWarm(b, warm, 1)
		b.StartTimer()
		// A pod counts as warm once its executor has answered the
		// handshake.
		f, w := "fresh-"+randomName(), "warm-"+randomName()
		df := first(fresh, f)
		dw := first(warm, w)
		tFresh, tWarm = append(tFresh, df), append(tWarm, dw)
		b.StopTimer()
		endOwner(b, fresh, f)
		endOwner(b, warm, w)
		b.StartTimer()
	}
	b.ReportMetric(quantile(tFresh, 0.5), "fresh-ms")
	b.ReportMetric(quantile(tFresh, 0.9), "fresh-p90-ms")
	b.ReportMetric(quantile(tWarm, 0.5), "warm-ms")
	b.ReportMetric(quantile(tWarm, 0.9), "warm-p90-ms")
	b.ReportMetric(quantile(tFresh, 0.5)/quantile(tWarm, 0.5), "fresh/warm")
}

// BenchmarkCall measures one call of `true` (Resolve and Run) in one loop
// that alternates the local executor, a pod's executor over its exec
// stream (a session whose pod is up: not its first call) and an executor
// over SSH to a loopback sshd (connection up), each far side serving the
// same local executor, so that machine noise hits them alike. The local
// executor runs twice: holding commands by cgroup, as the SSH far side on
// this host does, and by process group, as the pod's does. It reports
// each one's median and 90th percentile, and the median overheads of SSH
// over the first and of the pod over the second.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	c := servetest.Defaults(b)
	le, err := local.New(servetest.Config{Config: c, SpillDir: b.TempDir()}.Options())
	if err != nil {
		b.Fatal(err)
	}
	defer le.Close()
	// The pod's executor holds commands by process group (no cgroup in
	// the pod); the host's, by cgroup where it can: the like-for-like
	// baseline of the pod is a local executor holding them by process
	// group.
	o := servetest.Config{Config: c, SpillDir: b.TempDir()}.Options()
	o.Containment = local.ContainProcessGroup
	lg, err := local.New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()

	k := newCluster(b)
	pe := k.benchExecutor(b, c, nil)
	if _, err := run(pe, "bench", "true"); err != nil { // the pod, up
		b.Fatal(err)
	}

	s := sshdtest.Start(b)
	d := &remote.SSH{User: s.User, Host: "127.0.0.1", Port: s.Port, KnownHosts: []string{s.KnownHosts},
		IdentityFiles: []string{s.Identity}, NoAgent: true, Command: shellJoin(serveArgv(b, c)),
		Stderr: os.Stderr, WaitDelay: 5 * time.Second}
	se, err := testwait.Reply("hello over SSH", func(ctx context.Context) (*remote.Executor, error) {
		return remote.Dial(ctx, d.Dial, &remote.Options{Host: d.Name()})
	})
	if err != nil {
		b.Fatal(err)
	}
	defer se.Close()
	b.Logf("containment: local %s, local-pgroup %s, ssh %s, pod process-group", le.Containment(), lg.Containment(), se.Hello().Containment)

	call := func(e bash.Executor) func() {
		return func() {
			spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if res, err := e.Run(ctx, spec); err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	}
	loc, locPG, pod, ssh := call(le), call(lg), call(pe), call(se)
	var tLoc, tLocPG, tPod, tSSH, dPod, dSSH []time.Duration
	for b.Loop() {
		l, g, p, s := timed(loc), timed(locPG), timed(pod), timed(ssh)
		tLoc, tLocPG, tPod, tSSH = append(tLoc, l), append(tLocPG, g), append(tPod, p), append(tSSH, s)
		dPod, dSSH = append(dPod, p-g), append(dSSH, s-l)
	}
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"local", tLoc}, {"local-pgroup", tLocPG}, {"pod", tPod}, {"ssh", tSSH}} {
		b.ReportMetric(quantile(m.ds, 0.5), m.name+"-ms")
		b.ReportMetric(quantile(m.ds, 0.9), m.name+"-p90-ms")
	}
	b.ReportMetric(quantile(dPod, 0.5), "pod-over-local-pgroup-ms")
	b.ReportMetric(quantile(dSSH, 0.5), "ssh-over-local-ms")
}

func timed(f func()) time.Duration {
	t0 := time.Now()
	f()
	return time.Since(t0)
}

// quantile is the q-quantile of ds (nearest rank) in milliseconds.
func quantile(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(int(q*float64(len(s))), len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}
