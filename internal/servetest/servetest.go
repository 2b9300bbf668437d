// Package servetest gives the tests of the remote executors a far side
// that serves a local executor with the conformance suite's knobs: the
// suite's bashtest.Config travels to the far side's process as JSON, and
// becomes its local.Options there.
package servetest

import (
	"encoding/json"

	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/local"
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
