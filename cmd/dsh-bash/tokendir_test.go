//go:build linux

package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMCPStdioMakesNoTokenDir: over stdio there is no token, and no
// directory for one.
func TestMCPStdioMakesNoTokenDir(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	m := startRawMCPIn(t, tmp)
	m.call(1, "true", false)
	m.answer(1)
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "dsh-bash-") {
			t.Errorf("stdio mcp made %s", e.Name())
		}
	}
}

// TestStaleTokenDirSwept: the directory of a generated token, left behind
// by a dsh-bash mcp --http killed with SIGKILL, is removed by the next
// dsh-bash to start, which says so; a live server's stays.
func TestStaleTokenDirSwept(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	killed := startHTTP(t, env, "--http", "127.0.0.1:0")
	dead := filepath.Dir(killed.tokenPath(t))
	killed.cmd.Process.Kill()
	killed.cmd.Wait()
	if _, err := os.Stat(dead); err != nil {
		t.Fatalf("the killed server's token directory: %v", err)
	}
	next := startHTTP(t, env, "--http", "127.0.0.1:0")
	live := filepath.Dir(next.tokenPath(t))
	if filepath.Dir(dead) != tmp || filepath.Dir(live) != tmp {
		t.Fatalf("token directories %s and %s, not in TMPDIR %s", dead, live, tmp)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) || !slices.Contains(next.before, "dsh-bash mcp: removed "+dead+", left behind by a dsh-bash that was killed") {
		t.Errorf("the next start: stderr %q; the stale directory: %v", next.before, err)
	}
	// (Its stderr may name the cgroups of dsh-bash processes other tests
	// killed.)
	if _, errOut, code := dshBashEnv(t, t.TempDir(), env, "run", "--", "true"); code != 0 || strings.Contains(errOut, live) {
		t.Errorf("a start beside the live server: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live server's token directory: %v", err)
	}
}
