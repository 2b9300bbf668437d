//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
)

// BenchmarkCallTrue measures one foreground call of `true`, in one loop
// that alternates raw exec.Command("bash", "-c", "true"), the local
// executor, the sandbox (in a jail already up) and the Landlock layer (a
// session already up), so that machine noise hits all four alike. It
// reports each one's median and each sandbox's median overhead over the
// local executor, per call.
func BenchmarkCallTrue(b *testing.B) {
	ctx := context.Background()
	le, err := local.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer le.Close()
	se, ll := newBenchSandbox(b, LayerJail), newBenchSandbox(b, LayerLandlock)
	run := func(e bash.Executor) func() {
		spec, _ := e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "bench"})
		return func() {
			if _, err := e.Run(ctx, spec); err != nil {
				b.Fatal(err)
			}
		}
	}
	raw := func() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	loc, sb, lb := run(le), run(se), run(ll)
	sb() // the sessions' starts are measured by BenchmarkSessionStart
	lb()
	var tRaw, tLoc, tSb, tLl, diff, diffLl []time.Duration
	for b.Loop() {
		tRaw = append(tRaw, timed(raw))
		l, s, k := timed(loc), timed(sb), timed(lb)
		tLoc, tSb, tLl = append(tLoc, l), append(tSb, s), append(tLl, k)
		diff, diffLl = append(diff, s-l), append(diffLl, k-l)
	}
	b.ReportMetric(median(tRaw), "raw-median-ms")
	b.ReportMetric(median(tLoc), "local-median-ms")
	b.ReportMetric(median(tSb), "sandbox-median-ms")
	b.ReportMetric(median(tLl), "landlock-median-ms")
	b.ReportMetric(median(diff), "sandbox-over-local-median-ms")
	b.ReportMetric(median(diffLl), "landlock-over-local-median-ms")
}

// BenchmarkClone3Guard measures what the supervision of clone3 in the
// Landlock layer (see clone3Guard) costs a call: of `true` (the agent's
// own clone3, to start the shell in its cgroup) and of python3 starting
// 20 threads (each a refused clone3, then a clone), with the guard and
// without (the baseline), alternating in one loop.
func BenchmarkClone3Guard(b *testing.B) {
	ctx := context.Background()
	const threads = `/usr/bin/python3 -c 'import threading
ts = [threading.Thread(target=int) for _ in range(20)]
for t in ts: t.start()
for t in ts: t.join()'`
	var calls [2][2]func()
	for i, off := range []bool{false, true} {
		se, err := newSandbox(b, &Options{Layer: LayerLandlock, noClone3Guard: off, Local: &local.Options{Cwd: b.TempDir()}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { se.Close() })
		for j, cmd := range []string{"true", threads} {
			spec, _ := se.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: "bench"})
			calls[i][j] = func() {
				if res, err := se.Run(ctx, spec); err != nil || res.ExitCode != 0 {
					b.Fatal(err, res.Stderr.Text)
				}
			}
			calls[i][j]()
		}
	}
	var ts [2][2][]time.Duration
	for b.Loop() {
		for i := range calls {
			for j := range calls[i] {
				ts[i][j] = append(ts[i][j], timed(calls[i][j]))
			}
		}
	}
	for i, guard := range []string{"guarded", "unguarded"} {
		for j, cmd := range []string{"true", "threads"} {
			b.ReportMetric(median(ts[i][j]), cmd+"-"+guard+"-median-ms")
		}
	}
}

// BenchmarkSessionStart measures a new session's first call: the jail's
// start (bwrap, the agent, its Landlock rules) and one `true` in it, then
// the session's end.
func BenchmarkSessionStart(b *testing.B) {
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		b.Run(layer.String(), func(b *testing.B) { benchSessionStart(b, layer) })
	}
}

func benchSessionStart(b *testing.B, layer Layer) {
	ctx := context.Background()
	se := newBenchSandbox(b, layer)
	var ts []time.Duration
	i := 0
	for b.Loop() {
		i++
		owner := "session-" + strconv.Itoa(i)
		spec, _ := se.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: owner})
		ts = append(ts, timed(func() {
			if _, err := se.Run(ctx, spec); err != nil {
				b.Fatal(err)
			}
		}))
		if err := se.EndOwner(ctx, owner); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(median(ts), "first-call-median-ms")
}

func newBenchSandbox(b *testing.B, layer Layer) *Executor {
	se, err := newSandbox(b, &Options{Layer: layer, Local: &local.Options{Cwd: b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { se.Close() })
	return se
}

func timed(f func()) time.Duration {
	t := time.Now()
	f()
	return time.Since(t)
}

func median(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// BenchmarkInputRoundTrip measures one line written to a running `cat`
// and read back (WriteInput: the write, the echo, and a 1 ms settle), in
// one loop alternating the local executor, the jail and the Landlock
// layer; it reports each one's median, each sandbox's median overhead
// over the local executor, and the local executor's plain call of `true`
// beside them.
func BenchmarkInputRoundTrip(b *testing.B) {
	ctx := context.Background()
	le, err := local.New(&local.Options{Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer le.Close()
	se, ll := newBenchSandbox(b, LayerJail), newBenchSandbox(b, LayerLandlock)
	echo := func(e bash.Executor) func() {
		spec, _ := e.Resolve(ctx, bash.ExecRequest{Command: "cat", Owner: "bench"})
		spec.Input = true
		task, err := e.Start(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _, _ = e.Kill(ctx, task.ID) })
		in := bash.Input{Data: []byte("ping\n"), Settle: time.Millisecond, Wait: 5 * time.Second}
		return func() {
			r, err := e.WriteInput(ctx, task.ID, in)
			if err != nil || r.Stdout.Text != "ping\n" {
				b.Fatalf("WriteInput: %q, %v", r.Stdout.Text, err)
			}
		}
	}
	plainSpec, _ := le.Resolve(ctx, bash.ExecRequest{Command: "true"})
	plain := func() {
		if _, err := le.Run(ctx, plainSpec); err != nil {
			b.Fatal(err)
		}
	}
	loc, sb, lb := echo(le), echo(se), echo(ll)
	var tPlain, tLoc, tSb, tLl, diff, diffLl []time.Duration
	for b.Loop() {
		tPlain = append(tPlain, timed(plain))
		l, s, k := timed(loc), timed(sb), timed(lb)
		tLoc, tSb, tLl = append(tLoc, l), append(tSb, s), append(tLl, k)
		diff, diffLl = append(diff, s-l), append(diffLl, k-l)
	}
	b.ReportMetric(median(tPlain), "local-plain-call-median-ms")
	b.ReportMetric(median(tLoc), "local-median-ms")
	b.ReportMetric(median(tSb), "sandbox-median-ms")
	b.ReportMetric(median(tLl), "landlock-median-ms")
	b.ReportMetric(median(diff), "sandbox-over-local-median-ms")
	b.ReportMetric(median(diffLl), "landlock-over-local-median-ms")
}

// BenchmarkFenceConnect measures what the fence costs a connect, in one
// loop that alternates two jails with the network off, one fenced and one
// not (Options.noFence): each iteration runs the probe there, which
// times 200 connects (and accepts) on TCP loopback, then 200 to a unix
// socket in /tmp, from blocking sockets and then from non-blocking ones,
// then 200 sendmsg on a connected pair, and a call of `true`. It reports
// the medians of each jail's mean connect of each kind, sendmsg, and
// call.
func BenchmarkFenceConnect(b *testing.B) {
	ctx := context.Background()
	kinds := []string{"tcp-blocking", "unix-blocking", "tcp-nonblocking", "unix-nonblocking", "sendmsg"}
	type jail struct {
		name  string
		run   func() string
		call  func()
		conns [5][]time.Duration
		calls []time.Duration
	}
	mk := func(noFence bool) *jail {
		ws := b.TempDir()
		se, err := newSandbox(b, &Options{Layer: LayerJail, noFence: noFence, Policy: Policy{Network: NetworkOff},
			Local: &local.Options{Cwd: ws}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { se.Close() })
		probe, _ := se.Resolve(ctx, bash.ExecRequest{Command: probeIn(ws, "fence", "bench", "200"), Owner: "bench"})
		tr, _ := se.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "bench"})
		j := &jail{name: "fenced"}
		if noFence {
			j.name = "unfenced"
		}
		j.run = func() string {
			res, err := se.Run(ctx, probe)
			if err != nil {
				b.Fatal(err)
			}
			return res.Stdout.Text
		}
		j.call = func() {
			if _, err := se.Run(ctx, tr); err != nil {
				b.Fatal(err)
			}
		}
		return j
	}
	jails := []*jail{mk(false), mk(true)}
	for _, j := range jails {
		j.call() // the jails' starts are measured by BenchmarkFenceStart
	}
	for b.Loop() {
		for _, j := range jails {
			var ns [5]int64
			out := j.run()
			if _, err := fmt.Sscanf(out, "bench: %d %d %d %d %d", &ns[0], &ns[1], &ns[2], &ns[3], &ns[4]); err != nil {
				b.Fatalf("the probe said %q", out)
			}
			for i := range ns {
				j.conns[i] = append(j.conns[i], time.Duration(ns[i]))
			}
			j.calls = append(j.calls, timed(j.call))
		}
	}
	for _, j := range jails {
		for i, kind := range kinds {
			b.ReportMetric(median(j.conns[i])*1000, kind+"-"+j.name+"-µs")
		}
		b.ReportMetric(median(j.calls), "call-"+j.name+"-ms")
	}
}

// BenchmarkFenceStart measures a new session's first call in a jail with
// the network off, fenced and not, alternately.
func BenchmarkFenceStart(b *testing.B) {
	ctx := context.Background()
	var ts [2][]time.Duration
	var es [2]*Executor
	for i, noFence := range []bool{false, true} {
		se, err := newSandbox(b, &Options{Layer: LayerJail, noFence: noFence, Policy: Policy{Network: NetworkOff},
			Local: &local.Options{Cwd: b.TempDir()}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { se.Close() })
		es[i] = se
	}
	n := 0
	for b.Loop() {
		n++
		for i, se := range es {
			owner := "session-" + strconv.Itoa(n)
			spec, _ := se.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: owner})
			ts[i] = append(ts[i], timed(func() {
				if _, err := se.Run(ctx, spec); err != nil {
					b.Fatal(err)
				}
			}))
			if err := se.EndOwner(ctx, owner); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(median(ts[0]), "first-call-fenced-ms")
	b.ReportMetric(median(ts[1]), "first-call-unfenced-ms")
}
