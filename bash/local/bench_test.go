//go:build linux

package local

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/pairbench"
)

// BenchmarkRunTrue compares one foreground call of `true` with a raw
// exec.Command("bash", "-c", "true").Run(). The "paired" cases alternate the
// two in one loop, so machine noise hits both alike, and report each one's
// mean and our overhead in percent.
func BenchmarkRunTrue(b *testing.B) {
	raw := func(b *testing.B) {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			raw(b)
		}
	})
	for name, mode := range modes(b) {
		e := newExec(b, &Options{Containment: mode})
		spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "true"})
		ours := func(b *testing.B) {
			if _, err := e.Run(context.Background(), spec); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("executor-"+name, func(b *testing.B) {
			for b.Loop() {
				ours(b)
			}
		})
		b.Run("paired-"+name, func(b *testing.B) { pairbench.Run(b, "raw", raw, "executor", ours) })
	}
}

// BenchmarkThroughput1G pushes 1 GiB through Run (which keeps the tail in
// memory and the whole stream in a spill file) beside a raw bash -c that
// writes the same stream to a file itself. peak-RSS-MB is the process's peak
// resident set during the executor runs (VmHWM, reset before them).
func BenchmarkThroughput1G(b *testing.B) {
	const n = 1 << 30
	b.Run("raw", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "out")
		b.SetBytes(n)
		for b.Loop() {
			if err := exec.Command("bash", "-c", "head -c 1G /dev/zero > "+out).Run(); err != nil {
				b.Fatal(err)
			}
			os.Remove(out)
		}
	})
	b.Run("executor", func(b *testing.B) {
		e := newExec(b, &Options{SpillBudget: n + 1<<20})
		spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "head -c 1G /dev/zero"})
		resetPeakRSS(b)
		b.SetBytes(n)
		for b.Loop() {
			res, err := e.Run(context.Background(), spec)
			if err != nil || res.Stdout.SpillPath == "" {
				b.Fatalf("%v, %+v", err, res.Stdout.SpillPath)
			}
		}
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-RSS-MB")
	})
}

// resetPeakRSS resets VmHWM (writing 5 to clear_refs).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS: %v", err)
	}
}

// peakRSS reads VmHWM in bytes.
func peakRSS(b *testing.B) int64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range bytes.Lines(st) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseInt(string(bytes.Fields(v)[0]), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkBackground500 starts 500 background tasks at once, reads each,
// and waits for all to finish; the figures are per task.
func BenchmarkBackground500(b *testing.B) {
	const tasks = 500
	e := newExec(b, &Options{MaxTasks: tasks, MaxTasksPerOwner: tasks, MaxFinishedTasks: tasks})
	done := make(chan bash.Task, tasks)
	e.OnTaskDone(func(t bash.Task) { done <- t })
	spec, _ := e.Resolve(context.Background(), bash.ExecRequest{Command: "echo hello; sleep 0.2", Owner: "bench"})
	b.ReportAllocs()
	var elapsed time.Duration
	for b.Loop() {
		begin := time.Now()
		ids := make([]bash.TaskID, 0, tasks)
		for range tasks {
			t, err := e.Start(context.Background(), spec)
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, t.ID)
		}
		for range tasks {
			<-done
		}
		for _, id := range ids {
			r, err := e.ReadOutput(context.Background(), id)
			if err != nil || r.Stdout.Text != "hello\n" {
				b.Fatalf("%s: %+v, %v", id, r, err)
			}
		}
		elapsed += time.Since(begin)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*tasks), "ns/task")
}

// BenchmarkProbe measures one reading of the kernel's state of a task
// that waits for input (the test binary's REPL, in read(2) and in poll),
// and the drain check that follows it.
func BenchmarkProbe(b *testing.B) {
	for _, mode := range []string{"read", "poll"} {
		b.Run(mode, func(b *testing.B) {
			e, err := New(testOptions(&Options{SpillDir: b.TempDir()}))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			task := startInput(b, e, bash.ExecRequest{Command: helperCmd(b, "waitin "+mode)}, nil)
			defer e.Kill(context.Background(), task.ID)
			if r, err := e.WriteInput(context.Background(), task.ID, bash.Input{Wait: 10 * time.Second}); err != nil || !r.Task.WaitingInput {
				b.Fatalf("the helper does not wait: %+v, %v", r, err)
			}
			t, _ := e.lookup(task.ID)
			var probe, drain time.Duration
			for b.Loop() {
				t0 := time.Now()
				r := t.p.probe(time.Second)
				t1 := time.Now()
				if r.state != inputWaiting || !t.p.drained() {
					b.Fatalf("probe: %+v", r)
				}
				probe, drain = probe+t1.Sub(t0), drain+time.Since(t1)
			}
			b.ReportMetric(float64(probe.Microseconds())/float64(b.N), "probe-µs/op")
			b.ReportMetric(float64(drain.Microseconds())/float64(b.N), "drain-µs/op")
		})
	}
}
