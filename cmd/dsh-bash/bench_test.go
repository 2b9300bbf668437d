//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

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
