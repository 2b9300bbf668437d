//go:build linux

package acpagent

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/dshgo/dsh/internal/acptest"
	"github.com/dshgo/dsh/internal/fakellm"
)

// BenchmarkBurstToSlowEditor: a command prints 300 MB in one burst while
// the editor pauses over every message it reads (acptest.PacedReader), so
// the agent's writes block on the pipe as they do on a slow editor. It
// reports the process's peak RSS over the prompt (VmHWM, reset before it
// starts; the process also holds the in-process editor, which keeps no
// output). "terminal" streams the output live, as terminal cards do; the
// same-run baseline "no-terminal" is the same command without the
// terminal_output capability, so with no live output. Run it alone:
//
//	go test -run '^$' -bench BurstToSlowEditor -benchtime 1x -benchmem ./acpagent
func BenchmarkBurstToSlowEditor(b *testing.B) {
	const command = `head -c 300000000 /dev/zero | tr '\0' a`
	for _, mode := range []struct {
		name     string
		terminal bool
	}{{"no-terminal", false}, {"terminal", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var peak, start, shown, msgs, lost int64
			for b.Loop() {
				r := newRigWith(b, rigOptions{terminal: mode.terminal, yolo: true,
					clientReader: func(r io.Reader) io.Reader { return acptest.PacedReader(r, time.Millisecond) }},
					fakellm.Turn{Calls: []fakellm.Call{bashCall("c1", command)}}, fakellm.Turn{Text: "ok"})
				var n, size atomic.Int64
				r.client.SetTerminalOutput(func(_, data string) { n.Add(1); size.Add(int64(len(data))) })
				sid := r.newSession(b, b.TempDir())
				start = max(start, resetPeakRSS(b))
				_, err := r.conn.Prompt(context.Background(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock("go")}})
				peak = max(peak, procStatusKB(b, "VmHWM"))
				if err != nil {
					lost++ // the editor gave up: its connection broke
				}
				r.close()
				shown, msgs = shown+size.Load(), msgs+n.Load()
			}
			b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
			b.ReportMetric(float64(start)/1024, "start-RSS-MB")
			b.ReportMetric(float64(shown)/float64(b.N)/1e6, "shown-MB/op")
			b.ReportMetric(float64(msgs)/float64(b.N), "updates/op")
			b.ReportMetric(float64(lost)/float64(b.N), "lost-editor/op")
		})
	}
}

// resetPeakRSS returns freed memory to the system, resets the process's
// peak RSS (VmHWM) to its current RSS, and returns that, in KiB.
func resetPeakRSS(b *testing.B) int64 {
	b.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
	return procStatusKB(b, "VmRSS")
}

// procStatusKB reads a "kB" field of /proc/self/status.
func procStatusKB(b *testing.B, field string) int64 {
	b.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			v, err := strconv.ParseInt(string(bytes.Fields(rest)[0]), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
