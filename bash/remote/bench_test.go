//go:build linux

package remote

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/servetest"
)

// BenchmarkCallTrue measures one bash call of `true` (Resolve and Run, as
// the tool makes them) in one loop that alternates the local executor, a
// remote executor over a `dsh-bash executor`-style subprocess, and one over
// SSH to a loopback sshd (connections already up), so that machine noise
// hits all three alike. It reports each one's median and the remote ones'
// median overheads over the local executor, per call.
func BenchmarkCallTrue(b *testing.B) {
	ctx := context.Background()
	c := servetest.Defaults(b)
	le, err := local.New(serverConfig{Config: c, SpillDir: b.TempDir()}.Options())
	if err != nil {
		b.Fatal(err)
	}
	defer le.Close()
	cfg, _ := json.Marshal(serverConfig{Config: c, SpillDir: b.TempDir()})
	cmd := &Command{Argv: []string{os.Args[0]}, Env: append(os.Environ(), serveEnv+"="+string(cfg))}
	pe, err := Dial(ctx, cmd.Dial, &Options{Host: "subprocess"})
	if err != nil {
		b.Fatal(err)
	}
	defer pe.Close()
	s := startSSHD(b)
	d := s.dialer(serveCommand(b, c))
	se, err := Dial(ctx, d.Dial, &Options{Host: d.Name()})
	if err != nil {
		b.Fatal(err)
	}
	defer se.Close()
	call := func(e bash.Executor) func() {
		return func() {
			spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := e.Run(ctx, spec); err != nil {
				b.Fatal(err)
			}
		}
	}
	loc, proc, ssh := call(le), call(pe), call(se)
	var tLoc, tProc, tSSH, dProc, dSSH []time.Duration
	for b.Loop() {
		l, p, s := timed(loc), timed(proc), timed(ssh)
		tLoc, tProc, tSSH = append(tLoc, l), append(tProc, p), append(tSSH, s)
		dProc, dSSH = append(dProc, p-l), append(dSSH, s-l)
	}
	b.ReportMetric(median(tLoc), "local-median-ms")
	b.ReportMetric(median(tProc), "subprocess-median-ms")
	b.ReportMetric(median(tSSH), "ssh-median-ms")
	b.ReportMetric(median(dProc), "subprocess-over-local-median-ms")
	b.ReportMetric(median(dSSH), "ssh-over-local-median-ms")
}

// gigabyte prints 1 GB.
const gigabyte = "head -c 1000000000 /dev/zero | tr '\\0' x"

// BenchmarkGigabyteOverSSH runs a command printing 1 GB through SSH, its
// output streamed live to this side (as the MCP server's progress
// notifications and the ACP terminal want it), and reports the time and
// the peak RSS (VmHWM) of this process and of the far side's server; and,
// as the baseline, the time of the same run through a local executor.
func BenchmarkGigabyteOverSSH(b *testing.B) {
	ctx := context.Background()
	s := startSSHD(b)
	c := servetest.Defaults(b)
	le, err := local.New(serverConfig{Config: c, SpillDir: b.TempDir()}.Options())
	if err != nil {
		b.Fatal(err)
	}
	defer le.Close()
	for b.Loop() {
		spec, _ := le.Resolve(ctx, bash.ExecRequest{Command: gigabyte})
		spec.OnOutput = func(bash.Stream, []byte) {}
		t0 := time.Now()
		if _, err := le.Run(ctx, spec); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "local-seconds")
		d := s.dialer(serveCommand(b, c))
		e, err := Dial(ctx, d.Dial, &Options{Host: d.Name()})
		if err != nil {
			b.Fatal(err)
		}
		spec, err = e.Resolve(ctx, bash.ExecRequest{Command: gigabyte})
		if err != nil {
			b.Fatal(err)
		}
		var streamed int64
		spec.OnOutput = func(_ bash.Stream, text []byte) { streamed += int64(len(text)) }
		t0 = time.Now()
		res, err := e.Run(ctx, spec)
		elapsed := time.Since(t0)
		if err != nil || !res.Stdout.Truncated || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
		far := vmHWM(e.Hello().Pid)
		e.Close()
		b.ReportMetric(elapsed.Seconds(), "seconds")
		b.ReportMetric(float64(streamed)/1e6, "MB-streamed-live")
		b.ReportMetric(float64(vmHWM(os.Getpid()))/1024, "client-peak-RSS-MB")
		b.ReportMetric(float64(far)/1024, "server-peak-RSS-MB")
	}
}

// vmHWM is a process's peak resident set size in KiB (0 if unknown).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func timed(f func()) time.Duration {
	t0 := time.Now()
	f()
	return time.Since(t0)
}

func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}
