//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dshgo/dsh/internal/stamp"
)

// TestCleanStale: only the jails' directories of processes that are gone
// are removed, with what their commands left in them (a directory without
// permissions, a symlink out, which is not followed).
func TestCleanStale(t *testing.T) {
	t.Parallel()
	parent, outside := t.TempDir(), t.TempDir()
	start, err := stamp.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Our pid with another start time: a dead process whose pid we reuse.
	stale := filepath.Join(parent, fmt.Sprintf("dsh-jails-%d-%d-42", os.Getpid(), start+1))
	live := filepath.Join(parent, "dsh-jails-"+stamp.Self()+"-43")
	unstamped := filepath.Join(parent, "dsh-jails-44")
	for _, d := range []string{stale + "/tmp-1/locked/deep", live + "/tmp-2", unstamped} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keep := filepath.Join(outside, "keep")
	os.WriteFile(keep, []byte("x"), 0o600)
	os.Symlink(outside, stale+"/tmp-1/out")
	os.Chmod(stale+"/tmp-1/locked", 0)
	// A symlink with a stale name is not a directory of ours.
	os.Symlink(outside, filepath.Join(parent, fmt.Sprintf("dsh-jails-%d-%d-45", os.Getpid(), start+1)))

	removed, err := CleanStale(context.Background(), parent)
	if err != nil {
		t.Fatal(err)
	}
	// Other tests' killed servers may leave cgroups, removed too.
	removed = slices.DeleteFunc(removed, func(p string) bool { return filepath.Dir(p) != parent })
	if !slices.Equal(removed, []string{stale}) {
		t.Errorf("removed %q, want only %s", removed, stale)
	}
	for _, p := range []string{live, unstamped, keep} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Errorf("%s is still there", stale)
	}
}

// TestSessionsDirStamped: the directory of the Landlock layer's session
// temporary directories carries this process's stamp, so that CleanStale
// can find it once the process is gone.
func TestSessionsDirStamped(t *testing.T) {
	t.Parallel()
	if stamp.Self() == "" {
		t.Skip("no stamp: /proc cannot tell")
	}
	js := &jails{tempDir: t.TempDir()}
	if _, err := js.sessionTemp(); err != nil {
		t.Fatal(err)
	}
	if !staleJailsName.MatchString(filepath.Base(js.root)) {
		t.Errorf("the sessions' directory %s does not match %v", js.root, staleJailsName)
	}
}

// TestCleanStaleLimits: the cgroup v1 directories of an executor that is
// gone (empty, as its jails died with it) are removed, with its jails'.
//
// Not parallel: TestCleanStale would remove them first. (A dsh-bash that
// another package's test starts may still do so: then they are gone all
// the same.)
func TestCleanStaleLimits(t *testing.T) {
	mounts, own, _ := cgroupFiles("/proc/self/cgroup")
	parent, err := v1Dir(mounts, own, "memory")
	if err != nil {
		t.Skipf("no cgroup v1 memory hierarchy: %v", err)
	}
	start, err := stamp.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, fmt.Sprintf("dsh-limits-%d-%d-42", os.Getpid(), start+1))
	// A jail's cgroup may hold another executor's (a server started in
	// it): removed too, deepest first.
	nested := filepath.Join(stale, "jail-1", fmt.Sprintf("dsh-limits-%d-%d-43", os.Getpid(), start+1), "jail-1")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Skipf("cannot make cgroups here: %v", err)
	}
	removed, err := CleanStale(context.Background(), t.TempDir())
	if err != nil {
		t.Error(err)
	}
	t.Logf("removed %q", removed)
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s is still there", stale)
		for d := nested; d != parent; d = filepath.Dir(d) {
			os.Remove(d)
		}
	}
}
