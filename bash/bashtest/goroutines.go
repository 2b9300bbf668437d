//go:build linux

package bashtest

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"time"
)

// The suite's tests run side by side, so a goroutine is known as one
// executor's by a pprof label, not by having been born after the test
// began: the harness labels its test's goroutine, and every goroutine
// started from then on, by it or by a goroutine it started, inherits the
// label. (A goroutine the runtime starts for a time.AfterFunc takes the
// label of whatever goroutine ran the timer; such goroutines are short,
// and the check below waits for them.)
const labelKey = "dsh-bashtest-executor"

// labelGoroutine marks the calling goroutine, and all it starts from now
// on, as belonging to the harness id.
func labelGoroutine(id string) {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(labelKey, id)))
}

// unlabelGoroutine takes the calling goroutine's labels away.
func unlabelGoroutine() { pprof.SetGoroutineLabels(context.Background()) }

// goroutinesLeft waits, up to bound, until no goroutine labelled id is
// left, and returns the stacks of those that still are.
func goroutinesLeft(id string, bound time.Duration) []string {
	deadline := time.Now().Add(bound)
	wait := time.Millisecond
	for {
		left := labelled(id)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		// Polled, as goleak does: a goroutine's end is no event a test
		// can wait on.
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// labelled returns the stacks of the live goroutines labelled id, from the
// goroutine profile's text form, in which a group of goroutines with one
// stack reads:
//
//	2 @ 0x4a1b2c 0x4a3d4e
//	# labels: {"dsh-bashtest-executor":"123.4"}
//	#	0x4a1b2b	main.f+0x2b	/src/main.go:12
func labelled(id string) []string {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return []string{"the goroutine profile cannot be read: " + err.Error()}
	}
	want := `"` + labelKey + `":"` + id + `"`
	var out []string
	for _, group := range strings.Split(b.String(), "\n\n") {
		for _, line := range strings.Split(group, "\n") {
			if strings.HasPrefix(line, "# labels: ") && strings.Contains(line, want) {
				out = append(out, group)
				break
			}
		}
	}
	return out
}
