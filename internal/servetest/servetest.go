//go:build linux

// Package servetest gives the tests of the remote executors a far side
// that serves a local executor with the conformance suite's knobs: the
// suite's bashtest.Config travels to the far side's process as JSON, and
// becomes its local.Options there.
package servetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
)

// Config is the suite's Config for a far side, with the spill directory.
type Config struct {
	bashtest.Config
	SpillDir string
}

// Options are the far side's local executor's options.
func (c Config) Options() *local.Options {
	return &local.Options{
		Cwd: c.Cwd, Timeout: c.Timeout, MaxTimeout: c.MaxTimeout,
		Grace: c.Grace, DrainDelay: c.DrainDelay, MaxOutputBytes: c.MaxOutputBytes,
		MaxTasksPerOwner: c.MaxTasksPerOwner, MaxTasks: c.MaxTasks,
		Env: c.Env, SpillDir: c.SpillDir,
	}
}

// Defaults is the suite's Config with a local executor's defaults, in a
// directory of t's: the far sides' (and local baselines') configuration in
// benchmarks.
func Defaults(t testing.TB) bashtest.Config {
	return bashtest.Config{Cwd: t.TempDir(), Timeout: 2 * time.Minute, MaxTimeout: 10 * time.Minute,
		Grace: 3 * time.Second, DrainDelay: 250 * time.Millisecond, MaxOutputBytes: 64000,
		MaxTasksPerOwner: 16, MaxTasks: 64}
}

// Encode is c as the far side's command line takes it.
func (c Config) Encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // a Config always marshals
	}
	return string(b)
}

// Decode reads what Encode wrote.
func Decode(s string) (Config, error) {
	var c Config
	err := json.Unmarshal([]byte(s), &c)
	return c, err
}

// ServeFunc serves exec on stream, its handshake saying containment:
// remote.Serve, which this package cannot name (bash/remote's own tests
// use it).
type ServeFunc func(ctx context.Context, stream io.ReadWriteCloser, exec bash.Executor, containment string) error

// Main is a far side's main: it serves the local executor that cfg (as
// Encode wrote it) describes on this process's stdin and stdout, with
// serve, and returns the exit code.
func Main(cfg string, serve ServeFunc) int {
	c, err := Decode(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	e, err := local.New(c.Options())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := serve(context.Background(), stdio{}, e, e.Containment().String()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// stdio is this process's stdin and stdout as one stream.
type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return os.Stdin.Close() }

// Farside is the path of internal/servetest/farside, a far side built
// without the race detector, built once per test process in a
// directory of its own (where pods see it: the host's /tmp) that
// RemoveFarside removes. A race-built test binary as the far side costs
// several times its CPU at each start; the tests that serve in-process
// (over pipes) still check the far side's code for races.
func Farside(t testing.TB) string {
	t.Helper()
	path, err := buildFarside()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

var buildFarside = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "farside-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "farside")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := proctest.Build(ctx, path, "github.com/dshgo/dsh/internal/servetest/farside"); err != nil {
		return "", fmt.Errorf("the far side: %w", err)
	}
	return path, nil
})

// RemoveFarside removes what Farside built, if it did; TestMain calls it
// once the tests have run.
func RemoveFarside() {
	if path, err := buildFarside(); err == nil {
		os.RemoveAll(filepath.Dir(path))
	}
}
