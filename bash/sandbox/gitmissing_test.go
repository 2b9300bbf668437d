//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeMissing: the missing entries are made as git reads their
// absence; nothing existing changes, and nothing is made through a link.
func TestMakeMissing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(ws, gd, outside string)
		want  map[string]string // path relative to ws → content ("/" for a directory, "-" for absent)
	}{
		{"all missing", func(ws, gd, outside string) {},
			map[string]string{".git/hooks": "/", ".git/commondir": ".", ".git/config.worktree": "", ".git/info/attributes": ""}},
		{"existing entries kept", func(ws, gd, outside string) {
			os.WriteFile(filepath.Join(gd, "commondir"), []byte("../main/.git\n"), 0o644)
			os.MkdirAll(filepath.Join(gd, "info"), 0o755)
			os.WriteFile(filepath.Join(gd, "info", "attributes"), []byte("*.bin binary\n"), 0o644)
		}, map[string]string{".git/commondir": "../main/.git\n", ".git/info/attributes": "*.bin binary\n", ".git/hooks": "/"}},
		{"info is a link out", func(ws, gd, outside string) {
			os.Symlink(outside, filepath.Join(gd, "info"))
		}, map[string]string{".git/commondir": ".", "OUT/attributes": "-"}},
		{"commondir is a dangling link out", func(ws, gd, outside string) {
			os.Symlink(filepath.Join(outside, "planted"), filepath.Join(gd, "commondir"))
		}, map[string]string{"OUT/planted": "-", ".git/hooks": "/"}},
		{"the git directory is a link out", func(ws, gd, outside string) {
			os.Remove(gd)
			os.Symlink(outside, gd)
		}, map[string]string{"OUT/hooks": "-", "OUT/commondir": "-"}},
		{"a directory above it is a link out", func(ws, gd, outside string) {
			os.Remove(gd)
			os.Mkdir(filepath.Join(outside, ".git"), 0o755)
			os.Symlink(outside, filepath.Join(ws, "sub"))
		}, map[string]string{"OUT/.git/hooks": "-", "OUT/.git/commondir": "-"}},
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
			makeMissing(ws, gd)
			for rel, want := range tc.want {
				path := filepath.Join(ws, rel)
				if rest, ok := strings.CutPrefix(rel, "OUT/"); ok {
					path = filepath.Join(outside, rest)
				}
				if got := describe(path); got != want {
					t.Errorf("%s: %q, want %q", rel, got, want)
				}
			}
		})
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
