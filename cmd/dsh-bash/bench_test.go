//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/pairbench"
	"github.com/dshgo/dsh/toolbash"
	"github.com/dshgo/dsh/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkBashTrue compares a bash call of `true` over stdio MCP (to the
// built dsh-bash mcp) with the same call through the in-process tool layer
// that dsh-bash run uses. "paired" alternates them in one loop and reports
// each one's mean and the MCP overhead.
func BenchmarkBashTrue(b *testing.B) {
	ctx := context.Background()
	args := map[string]any{"command": "true", "description": "Do nothing"}
	raw, _ := json.Marshal(args)

	exec, err := local.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer exec.Close()
	tb := toolbash.New(exec, nil)
	defer tb.Close()
	var reg tools.Registry
	tb.Register(&reg)
	inProcess := func(b *testing.B) {
		if res := reg.Execute(ctx, &tools.Call{Tool: "bash", Args: raw}); res.IsError {
			b.Fatal(res.Text())
		}
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: execCommand("mcp")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	overMCP := func(b *testing.B) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}

	b.Run("tool-layer", func(b *testing.B) {
		for b.Loop() {
			inProcess(b)
		}
	})
	b.Run("mcp-stdio", func(b *testing.B) {
		for b.Loop() {
			overMCP(b)
		}
	})
	b.Run("paired", func(b *testing.B) { pairbench.Run(b, "tool-layer", inProcess, "mcp", overMCP) })
}

// BenchmarkMCPPeakRSS measures the peak RSS of the built dsh-bash mcp
// while a command prints 1 GB, for a client that passes no progress token
// (the baseline) and for one that passes one and so gets the live output
// as progress notifications (as Claude Code does on every call). Each
// iteration is a fresh server; the figure is the largest peak (ru_maxrss of
// the exited process) over the iterations.
func BenchmarkMCPPeakRSS(b *testing.B) {
	const command = "yes | head -c 1000000000"
	for _, mode := range []struct {
		name  string
		token bool
	}{{"no-token", false}, {"progress-token", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var peakKB int64
			var notes atomic.Int64
			for b.Loop() {
				client := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{
					ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { notes.Add(1) },
				})
				cmd := execCommand("mcp")
				cmd.Env = append(os.Environ(), "TMPDIR="+b.TempDir())
				cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
				if err != nil {
					b.Fatal(err)
				}
				params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": command, "description": "Print 1 GB"}}
				if mode.token {
					params.SetProgressToken("bench")
				}
				if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
					b.Fatal(err, res)
				}
				cs.Close()
				peakKB = max(peakKB, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
			}
			b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MB")
			b.ReportMetric(float64(notes.Load())/float64(b.N), "progress/op")
		})
	}
}

// replConfig is one way of driving a Python REPL through dsh-bash mcp.
type replConfig struct {
	name   string
	args   []string // the server's flags
	tty    bool
	cs     *mcp.ClientSession
	trip   []time.Duration // one bash_input each
	ten    []time.Duration // ten bash_inputs in a row each
	taskID string
}

// BenchmarkREPL measures bash_input over MCP stdio to the built dsh-bash
// mcp, against one Python REPL per configuration: the round trip of one
// interaction (print(6*7), answered 42) and of ten in a row, with the
// answer read from the kernel's state of the REPL's processes ("detect")
// and with the 200 ms settle ("settle", --input-probe=false), outside a
// sandbox ("local") and in a jail, through a pipe (python3 -u -i -q) and
// a terminal (python3 -q). One loop alternates every configuration, so
// the machine's noise hits all alike; each reports the p50 and p90 of
// its round trips and the mean of its ten in a row, in ms.
func BenchmarkREPL(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("no python3")
	}
	var configs []*replConfig
	for _, probe := range []string{"detect", "settle"} {
		for _, where := range []struct{ name, sandbox string }{{"local", "off"}, {"jail", "jail"}} {
			for _, tty := range []bool{false, true} {
				stdin := "pipe"
				if tty {
					stdin = "tty"
				}
				c := &replConfig{name: fmt.Sprintf("%s-%s-%s", probe, where.name, stdin), tty: tty}
				c.args = []string{"--sandbox", where.sandbox}
				if probe == "settle" {
					c.args = append(c.args, "--input-probe=false")
				}
				configs = append(configs, c)
			}
		}
	}
	for _, c := range configs {
		c.start(b)
	}
	for b.Loop() {
		for _, c := range configs {
			c.trip = append(c.trip, c.interact(b, 1))
			c.ten = append(c.ten, c.interact(b, 10))
		}
	}
	for _, c := range configs {
		b.ReportMetric(percentileMs(c.trip, 50), c.name+"-p50-ms")
		b.ReportMetric(percentileMs(c.trip, 90), c.name+"-p90-ms")
		b.ReportMetric(percentileMs(c.ten, 50), c.name+"-ten-p50-ms")
	}
}

// start starts the configuration's server and its REPL, and reads the
// REPL's first prompt.
func (c *replConfig) start(b *testing.B) {
	cmd := execCommand(append([]string{"mcp"}, c.args...)...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	c.cs = cs
	args := map[string]any{"command": "python3 -u -i -q", "description": "REPL", "input": true}
	if c.tty {
		args = map[string]any{"command": "python3 -q", "description": "REPL", "tty": true}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: args})
	if err != nil || res.IsError {
		b.Fatal(err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	c.taskID = strings.TrimSuffix(strings.Fields(text)[3], ";") // "started background task bash-1; …"
	for !strings.Contains(text, ">>> ") {
		text = c.call(b, "")
	}
}

// call writes in to the REPL and returns the answer.
func (c *replConfig) call(b *testing.B, in string) string {
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash_input", Arguments: map[string]any{"task_id": c.taskID, "input": in}})
	if err != nil || res.IsError {
		b.Fatal(err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// interact times n interactions, each checked: its answer, and the next
// prompt.
func (c *replConfig) interact(b *testing.B, n int) time.Duration {
	start := time.Now()
	for range n {
		if got := c.call(b, "print(6*7)\n"); !strings.HasPrefix(got, "42\n") || !strings.Contains(got, ">>> ") {
			b.Fatalf("%s: answer %q", c.name, got)
		}
	}
	return time.Since(start)
}

// percentileMs is the p-th percentile of d, in milliseconds.
func percentileMs(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)*p/100, len(s)-1)]) / float64(time.Millisecond)
}
