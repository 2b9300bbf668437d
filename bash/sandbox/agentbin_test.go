//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
)

// plainAgent is the agent the tests' jails start unless a test asks for
// the test binary itself (selfAgent): under -race, the command in
// internal/agent built without the race detector, once per test process,
// else the test binary.
func plainAgent(tb testing.TB) string {
	tb.Helper()
	path, err := buildPlainAgent()
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// selfAgent is the test binary, built as the tests are (with -race under
// `go test -race`): for the tests whose subject is the agent's own code.
func selfAgent(tb testing.TB) string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return exe
}

var buildPlainAgent = sync.OnceValues(func() (string, error) {
	if !proctest.Race {
		return os.Executable()
	}
	dir, err := os.MkdirTemp("", "dsh-agent-")
	if err != nil {
		return "", err
	}
	agentDir = dir
	bin := filepath.Join(dir, "agent")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := proctest.Build(ctx, bin, "github.com/dshgo/dsh/bash/sandbox/internal/agent"); err != nil {
		return "", fmt.Errorf("the agent: %w", err)
	}
	return bin, nil
})

// agentDir is the directory buildPlainAgent made, if any; TestMain
// removes it.
var agentDir string
