// Package promtooltest checks a Prometheus exposition with promtool,
// Prometheus' own linter, for the tests of the metrics and of the
// servers that expose them.
package promtooltest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"
)

// Check runs promtool check metrics on an exposition, and fails the test
// with what promtool said when it finds fault. Without promtool
// ($PROMTOOL, else on PATH) the test is skipped, but under CI (CI=true),
// where .ci/run provides it, it fails.
func Check(t testing.TB, exposition io.Reader) {
	t.Helper()
	tool := os.Getenv("PROMTOOL")
	if tool == "" {
		tool, _ = exec.LookPath("promtool")
	}
	if tool == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing ($PROMTOOL; .ci/run unpacks Debian's prometheus package for it)")
		}
		t.Skip("no promtool (Debian's prometheus package; or set $PROMTOOL)")
	}
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = exposition
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}
