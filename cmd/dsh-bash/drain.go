package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/dshgo/dsh/mcpserver"
)

// httpConfig is the configuration file's "http" object: settings of
// dsh-bash mcp --http that its flags override.
type httpConfig struct {
	// DrainTimeout is as --drain-timeout: "45s", "0" to end at once.
	DrainTimeout string `json:"drainTimeout"`

	drainTimeout time.Duration // DrainTimeout parsed, once checked
}

// check parses the object's values, naming a bad one and its line in b.
func (h *httpConfig) check(b []byte) error {
	if h.DrainTimeout == "" {
		return nil
	}
	d, err := time.ParseDuration(h.DrainTimeout)
	if err != nil || d < 0 {
		return fmt.Errorf("line %d: http.drainTimeout must be a duration such as \"30s\", or \"0\" to end at once (got %q)", keyLine(b, "drainTimeout"), h.DrainTimeout)
	}
	h.drainTimeout = d
	return nil
}

// registerDrainFlag adds --drain-timeout to fs.
func (hf *httpFlags) registerDrainFlag(fs *flag.FlagSet) {
	fs.DurationVar(&hf.drainTimeout, "drain-timeout", mcpserver.DefaultDrainTimeout, "with --http: on SIGTERM, refuse new sessions and give the calls in flight this long to finish before the sessions end (a second SIGTERM or SIGINT ends at once); 0 ends at once")
}

// mergeConfig takes the file's drain timeout unless the flag was given.
func (hf *httpFlags) mergeConfig(fs *flag.FlagSet, c *httpConfig) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "drain-timeout" })
	if !given && c.DrainTimeout != "" {
		hf.drainTimeout = c.drainTimeout
	}
}

// drainOnTerm makes the first SIGTERM drain the server (closing the
// channel returned, which is nil with no drain timeout: SIGTERM then ends
// at once); undo when serving is over. said, called once the drain
// holds (HTTPOptions.OnDrain), says so: not before, when a new session
// could still be taken.
func (hf *httpFlags) drainOnTerm(ctx context.Context, stderr io.Writer) (drain <-chan struct{}, said func(), undo func()) {
	if hf.drainTimeout <= 0 {
		return nil, nil, func() {}
	}
	ch := make(chan struct{})
	said = func() {
		fmt.Fprintf(stderr, "dsh-bash mcp: SIGTERM: draining: new sessions are refused, the calls in flight have %v to finish; SIGTERM again or SIGINT ends at once\n", hf.drainTimeout)
	}
	return ch, said, onTerm(ctx, func() { close(ch) })
}
