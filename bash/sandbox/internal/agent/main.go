// Command agent is a jail's agent and nothing else: a program that calls
// sandbox.Main. The tests of bash/sandbox build it without the race
// detector and start it in most of their jails: a race-built agent costs
// twice the CPU of a plain one at each jail's start, and those tests
// start hundreds. Their transcripts and the network allowlist test keep
// the race-built test binary as the agent, so its own code is still
// checked for races.
//
// It lives under bash/sandbox/internal because it is the sandbox's own:
// nothing outside bash/sandbox builds or starts it.
package main

import (
	"fmt"
	"os"

	"github.com/dshgo/dsh/bash/sandbox"
)

func main() {
	sandbox.Main() // exits when started as an agent
	fmt.Fprintln(os.Stderr, "sandboxagent: run by the sandbox as a jail's agent, not by hand")
	os.Exit(2)
}
