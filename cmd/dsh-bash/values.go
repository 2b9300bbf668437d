package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// maxMs is the most milliseconds a duration holds.
const maxMs = math.MaxInt64 / int64(time.Millisecond)

// checkValues refuses the values of executor flags that the executor
// would refuse, as a usage error naming the flag (not the option it sets).
func (f *execFlags) checkValues() error {
	for _, v := range []struct {
		name string
		n    int
		ms   bool
	}{
		{"default-timeout-ms", f.defaultTimeoutMs, true}, {"max-timeout-ms", f.maxTimeoutMs, true},
		{"grace-ms", f.graceMs, true}, {"drain-delay-ms", f.drainDelayMs, true},
		{"max-output-bytes", f.maxOutputBytes, false}, {"max-result-chars", f.maxResultChars, false},
		{"max-tasks", f.maxTasks, false}, {"max-tasks-per-session", f.maxTasksPerOwner, false},
	} {
		switch {
		case v.n < 0:
			return usageErr(fmt.Errorf("--%s must not be negative (got %d)", v.name, v.n))
		case v.ms && int64(v.n) > maxMs:
			return usageErr(fmt.Errorf("--%s must be at most %d (got %d)", v.name, maxMs, v.n))
		}
	}
	if f.defaultTimeoutMs > 0 && f.maxTimeoutMs > 0 && f.defaultTimeoutMs > f.maxTimeoutMs {
		return usageErr(fmt.Errorf("--default-timeout-ms %d is above --max-timeout-ms %d", f.defaultTimeoutMs, f.maxTimeoutMs))
	}
	for _, kv := range f.env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return usageErr(fmt.Errorf("--env %q is not NAME=VALUE", kv))
		}
	}
	return nil
}
