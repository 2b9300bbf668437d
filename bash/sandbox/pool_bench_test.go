//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/observe"
)

// BenchmarkWarmStart measures the first call (`true`) of sessions that
// start together, 1 or 20 at once, in each layer, without a warm pool
// and with one of as many jails, in one loop that alternates the two so
// that machine noise hits both alike; the sessions' second calls, made
// at once too, are the reference. Each wave starts once the pool is full again: its refill
// runs between the waves. It reports the first call's median and 99th
// percentile without and with the pool, the second call's median, the
// claim's median, and what an idle warm jail costs: its processes,
// their resident and proportional memory (the agent's text is shared
// by all). The floor is the median of as many `bash -c true` started at
// once by the benchmark itself (os/exec, no executor, no sandbox), in
// the same loop: what the machine takes to run the shells alone.
//
// Run it without -race: go test -run '^$' -bench WarmStart -benchtime 20x
func BenchmarkWarmStart(b *testing.B) {
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		for _, n := range []int{1, 20} {
			b.Run(layer.String()+"/"+strconv.Itoa(n), func(b *testing.B) { benchWarmStart(b, layer, n) })
		}
	}
}

func benchWarmStart(b *testing.B, layer Layer, n int) {
	cold := newBenchWarm(b, layer, 0)
	warm := newBenchWarm(b, layer, n)
	warm.full(b, n)
	procs, rss, pss := warm.idleCost(b)
	var first [2][]time.Duration
	var later, raw []time.Duration
	wave := 0
	for b.Loop() {
		for i, e := range []*benchWarm{cold, warm} {
			warm.full(b, n) // no refill runs during a wave of either
			wave++
			f, l := e.wave(b, n, wave)
			first[i] = append(first[i], f...)
			later = append(later, l...)
		}
		raw = append(raw, rawWave(b, n)...)
	}
	b.ReportMetric(percentile(first[0], 50), "first-p50-ms-cold")
	b.ReportMetric(percentile(first[0], 99), "first-p99-ms-cold")
	b.ReportMetric(percentile(first[1], 50), "first-p50-ms-warm")
	b.ReportMetric(percentile(first[1], 99), "first-p99-ms-warm")
	b.ReportMetric(percentile(later, 50), "second-p50-ms")
	b.ReportMetric(percentile(raw, 50), "floor-p50-ms")
	warm.mu.Lock()
	b.ReportMetric(percentile(warm.claims, 50), "claim-p50-ms")
	warm.mu.Unlock()
	b.ReportMetric(procs, "procs/idle-jail")
	b.ReportMetric(rss, "rss-KiB/idle-jail")
	b.ReportMetric(pss, "pss-KiB/idle-jail")
}

// benchWarm is an executor of the benchmark, and its pool's starts.
type benchWarm struct {
	e      *Executor
	ws     string
	warm   int
	starts chan struct{} // one per jail started into the pool
	mu     sync.Mutex
	claims []time.Duration // each claim's
}

func newBenchWarm(b *testing.B, layer Layer, warm int) *benchWarm {
	bw := &benchWarm{ws: b.TempDir(), warm: warm, starts: make(chan struct{}, 256)}
	se, err := newSandbox(b, &Options{Layer: layer, Warm: warm, Local: &local.Options{Cwd: bw.ws},
		Observe: func(ev observe.Event) {
			switch js := ev.(*observe.JailStart); {
			case js.Session == "" && js.Err == "":
				bw.starts <- struct{}{}
			case js.Pooled:
				bw.mu.Lock()
				bw.claims = append(bw.claims, js.Duration)
				bw.mu.Unlock()
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { se.Close() })
	bw.e = se
	return bw
}

// full waits until the pool is full again.
func (bw *benchWarm) full(b *testing.B, n int) {
	for bw.warm > 0 {
		if ready, _ := bw.e.PoolStatus(); ready == n {
			return
		}
		select {
		case <-bw.starts:
		case <-time.After(time.Minute):
			b.Fatal("the pool did not fill within a minute")
		}
	}
}

// wave starts n sessions at once and returns their first calls'
// durations, then has them make a second call at once and returns those;
// the sessions end after.
func (bw *benchWarm) wave(b *testing.B, n, wave int) (first, second []time.Duration) {
	ctx := context.Background()
	specs := make([]bash.ExecSpec, n)
	owner := func(i int) string { return "wave-" + strconv.Itoa(wave) + "-" + strconv.Itoa(i) }
	for i := range n {
		spec, err := bw.e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: owner(i), Workspace: bw.ws, Workdir: bw.ws})
		if err != nil {
			b.Fatal(err)
		}
		specs[i] = spec
	}
	first, second = bw.atOnce(b, specs), bw.atOnce(b, specs)
	for i := range n {
		if err := bw.e.EndOwner(ctx, owner(i)); err != nil {
			b.Fatal(err)
		}
	}
	return first, second
}

// atOnce runs a call of each spec at once and returns their durations.
func (bw *benchWarm) atOnce(b *testing.B, specs []bash.ExecSpec) []time.Duration {
	d := make([]time.Duration, len(specs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() {
			<-start
			t := time.Now()
			if _, err := bw.e.Run(context.Background(), spec); err != nil {
				b.Errorf("session %d: %v", i, err)
			}
			d[i] = time.Since(t)
		})
	}
	close(start)
	wg.Wait()
	return d
}

// rawWave runs n `bash -c true` at once, without an executor, and returns
// their durations.
func rawWave(b *testing.B, n int) []time.Duration {
	d := make([]time.Duration, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			t := time.Now()
			if err := exec.Command("bash", "-c", "true").Run(); err != nil {
				b.Errorf("bash %d: %v", i, err)
			}
			d[i] = time.Since(t)
		})
	}
	close(start)
	wg.Wait()
	return d
}

// idleCost is what an idle warm jail of the pool costs, on average: its
// processes (bwrap and the agent, or the agent alone), their resident
// memory and their proportional share of it, in KiB.
func (bw *benchWarm) idleCost(b *testing.B) (procs, rss, pss float64) {
	p := bw.e.jails.pool
	p.mu.Lock()
	var pids [][]int
	for _, j := range p.idle {
		pids = append(pids, jailPids(j.cmd.Process.Pid))
	}
	p.mu.Unlock()
	for _, jail := range pids {
		procs += float64(len(jail))
		for _, pid := range jail {
			r, p := memOf(pid)
			rss, pss = rss+r, pss+p
		}
	}
	k := float64(len(pids))
	return procs / k, rss / k, pss / k
}

// memOf is a process's resident and proportional memory in KiB.
func memOf(pid int) (rss, pss float64) {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(string(f[1]), 64)
		switch string(f[0]) {
		case "Rss:":
			rss = v
		case "Pss:":
			pss = v
		}
	}
	return rss, pss
}

// percentile is the q-th percentile of d, in milliseconds (nearest rank).
func percentile(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*q/100+0.5) - 1
	return float64(s[min(max(i, 0), len(s)-1)]) / float64(time.Millisecond)
}
