//go:build linux

package execguard_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash/execguard"
	"github.com/dshgo/dsh/internal/pairbench"
)

// BenchmarkStop: what one stop for the tracer costs, the unit of the
// guard's price. A bash that sends itself 2,000 signals it traps (no
// fork, no exec) is run untraced and traced, alternately; each traced
// signal is one signal-delivery stop and its resumption. A fork, exec
// and exit of a child costs about four such stops and a wake-up.
func BenchmarkStop(b *testing.B) {
	const n = 2000
	script := "trap : USR1; for ((i = 0; i < 2000; i++)); do kill -USR1 $$; done"
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Skip("no bash")
	}
	argv := []string{"bash", "--noprofile", "--norc", "-c", script}
	untraced := func(b *testing.B) {
		if err := exec.Command(bash, argv[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
	}
	traced := func(b *testing.B) {
		tr, err := execguard.Start(func() (int, error) {
			return syscall.ForkExec(bash, argv, &syscall.ProcAttr{Env: os.Environ(),
				Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Ptrace: true}})
		}, execguard.Options{Check: func(execguard.Exec) string { return "" }})
		if err != nil {
			b.Fatal(err)
		}
		<-tr.Done()
		if ws := tr.Wait(); ws.ExitStatus() != 0 {
			b.Fatalf("status %#x", uint32(ws))
		}
	}
	tu, tt := pairbench.Run(b, "untraced", untraced, "traced", traced)
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N*n) }
	b.ReportMetric(per(tu), "untraced-us/signal")
	b.ReportMetric(per(tt), "traced-us/signal")
	b.ReportMetric(per(tt-tu), "us/stop")
}
