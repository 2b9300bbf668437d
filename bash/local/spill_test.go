//go:build linux

package local

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
)

// TestSpillOwnersApart: each owner's spill files are in a 0700 directory of
// their own, named without the owner token, under the executor's.
func TestSpillOwnersApart(t *testing.T) {
	t.Parallel()
	e := newExec(t, &Options{MaxOutputBytes: 10})
	dirs := map[string]string{}
	for _, owner := range []string{"alice-session-token", "bob-session-token", "", "alice-session-token"} {
		res := run(t, e, bash.ExecRequest{Command: "seq 100", Owner: owner})
		if res.Stdout.SpillPath == "" {
			t.Fatalf("%q: no spill", owner)
		}
		dir := filepath.Dir(res.Stdout.SpillPath)
		if prev, ok := dirs[owner]; ok && prev != dir {
			t.Errorf("%q spilled in %s, then in %s", owner, prev, dir)
		}
		dirs[owner] = dir
		if fi, err := os.Lstat(dir); err != nil || fi.Mode() != os.ModeDir|0o700 {
			t.Errorf("%q: spill dir %s: %v %v", owner, dir, fi.Mode(), err)
		}
		if owner != "" && strings.Contains(dir, owner) {
			t.Errorf("the owner token is in the path %s", dir)
		}
	}
	if dirs["alice-session-token"] == dirs["bob-session-token"] || dirs[""] == dirs["bob-session-token"] || dirs[""] == dirs["alice-session-token"] {
		t.Errorf("owners share a spill directory: %v", dirs)
	}
	if filepath.Dir(dirs["alice-session-token"]) != filepath.Dir(dirs["bob-session-token"]) {
		t.Errorf("owners' directories are not in one executor directory: %v", dirs)
	}
}

// TestSpillDirSwappedForSymlink: a command replaces a spill directory (the
// owner's, or the executor's) with a symlink to a directory it controls,
// holding a decoy under the name of an existing spill file. Later spills
// must not land there, the paths given for them must name their files, and
// eviction and Close must not delete the decoy.
func TestSpillDirSwappedForSymlink(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"owner", "executor"} {
		t.Run(level, func(t *testing.T) {
			parent := t.TempDir()
			e, err := New(testOptions(&Options{MaxOutputBytes: 100, SpillBudget: 3000, SpillDir: parent, Grace: 500e6}))
			if err != nil {
				t.Fatal(err)
			}
			first := run(t, e, bash.ExecRequest{Command: "seq 500", Owner: "alice"}) // 1892 bytes
			if first.Stdout.SpillPath == "" {
				t.Fatal("no spill")
			}
			swapped := filepath.Dir(first.Stdout.SpillPath) // the owner's directory
			decoyRel := filepath.Base(first.Stdout.SpillPath)
			if level == "executor" {
				decoyRel = filepath.Join(filepath.Base(swapped), decoyRel)
				swapped = filepath.Dir(swapped)
			}
			evil := t.TempDir()
			plantDecoys(t, evil, decoyRel)
			runCmd(t, e, fmt.Sprintf("mv %q %q && ln -s %q %q", swapped, filepath.Join(parent, "moved"), evil, swapped))
			if fi, err := os.Lstat(swapped); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("setup: %s is not a symlink now: %v", swapped, err)
			}
			// Each spill evicts the one before (budget), and a new owner's
			// directory is made.
			// Each path the model is given names the file that holds the
			// output, not one the command planted on the way.
			for _, owner := range []string{"alice", "bob"} {
				r := run(t, e, bash.ExecRequest{Command: "seq 500", Owner: owner})
				if b, err := os.ReadFile(r.Stdout.SpillPath); err != nil || string(b) != seqText(500) {
					t.Errorf("%s's spill path %q does not hold the output: %v, %d bytes", owner, r.Stdout.SpillPath, err, len(b))
				}
			}
			checkDecoys(t, evil, decoyRel)
			err = e.Close()
			t.Logf("Close: %v", err)
			checkDecoys(t, evil, decoyRel)
		})
	}
}

// plantDecoys puts a decoy at rel under dir and another beside it.
func plantDecoys(t *testing.T, dir, rel string) {
	t.Helper()
	for _, p := range []string{rel, filepath.Join(filepath.Dir(rel), "other")} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o700)
		if err := os.WriteFile(filepath.Join(dir, p), []byte("decoy"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// checkDecoys checks that dir holds the two decoys, untouched, and nothing
// else.
func checkDecoys(t *testing.T, dir, rel string) {
	t.Helper()
	want := []string{rel, filepath.Join(filepath.Dir(rel), "other")}
	var got []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			r, _ := filepath.Rel(dir, p)
			got = append(got, r)
			if b, _ := os.ReadFile(p); string(b) != "decoy" {
				t.Errorf("%s was written to: %q", r, b)
			}
		}
		return nil
	})
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the command's directory holds %q; want just the decoys %q", got, want)
	}
}

// TestOpenPrivate: a spill directory is opened only if it is a directory of
// ours, not a symlink to one, and is made 0700.
func TestOpenPrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := openDirPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
	if sub, err := d.openPrivate("link"); err == nil {
		sub.close()
		t.Error("openPrivate followed a symlink")
	}
	if sub, err := d.openPrivate("file"); err == nil {
		sub.close()
		t.Error("openPrivate opened a file")
	}
	sub, err := d.openPrivate("real")
	if err != nil {
		t.Fatal(err)
	}
	sub.close()
	if fi, _ := os.Stat(filepath.Join(dir, "real")); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v; want 0700", fi.Mode().Perm())
	}
	if os.Geteuid() != 0 {
		t.Log("not root: cannot make a directory of another user here")
		return
	}
	os.Mkdir(filepath.Join(dir, "theirs"), 0o700)
	os.Chown(filepath.Join(dir, "theirs"), 65534, 65534)
	if sub, err := d.mkdirPrivate("theirs", false); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		sub.close()
		t.Errorf("mkdirPrivate took another user's directory: %v", err)
	}
	if sub, err := d.mkdirPrivate("real", true); err == nil {
		sub.close()
		t.Error("an exclusive mkdirPrivate took an existing directory")
	}
}
