//go:build linux

package main

import (
	"context"
	"encoding/json"
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
