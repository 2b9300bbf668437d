package proctest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBuild: Build puts a program at the path it is given, also when the
// build cache has it already, as a copy: a test that writes to its copy
// changes nobody else's.
func TestBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, name := range []string{"first", "second"} {
		path := filepath.Join(dir, name)
		if err := Build(ctx, path, "./testdata/hello"); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(path).Output()
		if err != nil || string(out) != "hello\n" {
			t.Fatalf("%s build: %q %v, want hello", name, out, err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho changed\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := Build(ctx, filepath.Join(dir, "bad"), "./testdata/no-such-package")
	if err == nil || !strings.Contains(err.Error(), "no-such-package") {
		t.Errorf("Build of a package that does not exist: %v, want an error naming it", err)
	}
}
