package main

import (
	"flag"
	"time"

	"github.com/dshgo/dsh/bash/local"
)

// execFlags are the executor flags every command that runs commands takes.
type execFlags struct {
	defaultTimeoutMs, maxTimeoutMs, maxOutputBytes int
}

func (f *execFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.defaultTimeoutMs, "default-timeout-ms", 0, "timeout of a call that sets none (default 120000)")
	fs.IntVar(&f.maxTimeoutMs, "max-timeout-ms", 0, "cap on any call's timeout (default 600000)")
	fs.IntVar(&f.maxOutputBytes, "max-output-bytes", 0, "bytes of each stream kept in memory (default 64000)")
}

// options turns the flags into executor options (zero: the default).
func (f *execFlags) options() *local.Options {
	return &local.Options{
		Timeout:        time.Duration(f.defaultTimeoutMs) * time.Millisecond,
		MaxTimeout:     time.Duration(f.maxTimeoutMs) * time.Millisecond,
		MaxOutputBytes: f.maxOutputBytes,
	}
}
