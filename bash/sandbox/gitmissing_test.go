//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPlaceholders: the missing entries are made as git reads their
// absence while a jail holds them, and removed when it lets go; nothing
// existing changes, and nothing is made through a link.
func TestPlaceholders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(ws, gd, outside string)
		want  map[string]string // path relative to ws → content ("/" for a directory, "-" for absent)
		after map[string]string // the same once released (default: all of want absent)
	}{
		{"all missing", func(ws, gd, outside string) {},
			map[string]string{".git/hooks": "/", ".git/commondir": ".", ".git/config.worktree": "", ".git/info/attributes": ""},
			map[string]string{".git/hooks": "-", ".git/commondir": "-", ".git/config.worktree": "-", ".git/info": "-"}},
		{"existing entries kept", func(ws, gd, outside string) {
			os.WriteFile(filepath.Join(gd, "commondir"), []byte("../main/.git\n"), 0o644)
			os.MkdirAll(filepath.Join(gd, "info"), 0o755)
			os.WriteFile(filepath.Join(gd, "info", "attributes"), []byte("*.bin binary\n"), 0o644)
			os.WriteFile(filepath.Join(gd, "config.worktree"), nil, 0o644) // empty, and the user's
		}, map[string]string{".git/commondir": "../main/.git\n", ".git/info/attributes": "*.bin binary\n", ".git/hooks": "/"},
			map[string]string{".git/commondir": "../main/.git\n", ".git/info/attributes": "*.bin binary\n", ".git/hooks": "-", ".git/config.worktree": ""}},
		{"the user's info directory", func(ws, gd, outside string) {
			os.MkdirAll(filepath.Join(gd, "info"), 0o755)
		}, map[string]string{".git/info/attributes": ""}, map[string]string{".git/info": "/", ".git/info/attributes": "-"}},
		{"info is a link out", func(ws, gd, outside string) {
			os.Symlink(outside, filepath.Join(gd, "info"))
		}, map[string]string{".git/commondir": ".", "OUT/attributes": "-"}, map[string]string{".git/commondir": "-"}},
		{"commondir is a dangling link out", func(ws, gd, outside string) {
			os.Symlink(filepath.Join(outside, "planted"), filepath.Join(gd, "commondir"))
		}, map[string]string{"OUT/planted": "-", ".git/hooks": "/"}, map[string]string{".git/hooks": "-"}},
		{"the git directory is a link out", func(ws, gd, outside string) {
			os.Remove(gd)
			os.Symlink(outside, gd)
		}, map[string]string{"OUT/hooks": "-", "OUT/commondir": "-"}, nil},
		{"a directory above it is a link out", func(ws, gd, outside string) {
			os.Remove(gd)
			os.Mkdir(filepath.Join(outside, ".git"), 0o755)
			os.Symlink(outside, filepath.Join(ws, "sub"))
		}, map[string]string{"OUT/.git/hooks": "-", "OUT/.git/commondir": "-"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			gd := filepath.Join(ws, ".git")
			os.Mkdir(gd, 0o755)
			tc.setup(ws, gd, outside)
			if _, err := os.Lstat(filepath.Join(ws, "sub")); err == nil {
				gd = filepath.Join(ws, "sub", ".git") // found there, then swapped
			}
			var g gitHolds
			if err := g.hold(ws, gd); err != nil {
				t.Fatal(err)
			}
			check(t, ws, outside, "held", tc.want)
			g.release()
			check(t, ws, outside, "released", tc.after)
		})
	}
}

// TestPlaceholdersShared: of two jails holding the same placeholders (of
// two servers, say), the first to end leaves them to the other, and the
// last removes them; placeholders a killed server left are removed by the
// next jail that holds them.
func TestPlaceholdersShared(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	gd := filepath.Join(ws, ".git")
	os.Mkdir(gd, 0o755)
	var first, second gitHolds
	if err := first.hold(ws, gd); err != nil {
		t.Fatal(err)
	}
	if err := second.hold(ws, gd); err != nil {
		t.Fatal(err)
	}
	made := map[string]string{".git/hooks": "/", ".git/commondir": ".", ".git/config.worktree": "", ".git/info/attributes": ""}
	first.release()
	check(t, ws, "", "the first released", made)
	second.release()
	check(t, ws, "", "both released", map[string]string{".git/hooks": "-", ".git/commondir": "-", ".git/info": "-"})

	var killed gitHolds
	if err := killed.hold(ws, gd); err != nil {
		t.Fatal(err)
	}
	for _, h := range killed.held { // a server killed: its descriptors close, nothing is removed
		unix.Close(h.fd)
	}
	killed.held = nil
	killed.release()
	check(t, ws, "", "left by a killed server", made)
	var next gitHolds
	if err := next.hold(ws, gd); err != nil {
		t.Fatal(err)
	}
	next.release()
	check(t, ws, "", "the next jail released", map[string]string{".git/hooks": "-", ".git/commondir": "-", ".git/info": "-"})
}

// check compares what is at the paths of want with it.
func check(t *testing.T, ws, outside, when string, want map[string]string) {
	t.Helper()
	for rel, want := range want {
		path := filepath.Join(ws, rel)
		if rest, ok := strings.CutPrefix(rel, "OUT/"); ok {
			path = filepath.Join(outside, rest)
		}
		if got := describe(path); got != want {
			t.Errorf("%s: %s: %q, want %q", when, rel, got, want)
		}
	}
}

// describe is "/" for a directory, "-" for nothing (or a link), else the
// file's content.
func describe(path string) string {
	fi, err := os.Lstat(path)
	switch {
	case err != nil || fi.Mode()&os.ModeSymlink != 0:
		return "-"
	case fi.IsDir():
		return "/"
	}
	b, _ := os.ReadFile(path)
	return string(b)
}
