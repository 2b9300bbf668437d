//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAround: the Landlock layer's readable paths cover a tree but its
// hidden paths, leave out links into them, and follow a link a hidden
// path is named through.
func TestAround(t *testing.T) {
	root := realPath(t.TempDir())
	for _, d := range []string{"a/secret", "a/other", "b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/ok.txt", "a/secret/key", "b/f"} {
		os.WriteFile(filepath.Join(root, f), nil, 0o644)
	}
	for link, target := range map[string]string{
		"into": "a/secret", // a link to a hidden directory
		"up":   "a",        // to one that holds a hidden path
		"side": "b",        // to one with nothing hidden
		"viab": "b",        // through which a hidden path is named
	} {
		if err := os.Symlink(filepath.Join(root, target), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	// viab/gone does not exist: it stays as named, under the link.
	hidden := []string{filepath.Join(root, "a/secret"), filepath.Join(root, "viab/gone")}
	got := around(root, true, hidden)
	for i := range got {
		got[i] = strings.TrimPrefix(got[i], root+"/")
	}
	slices.Sort(got)
	if want := []string{"a/ok.txt", "a/other", "b", "side", "viab/f"}; !slices.Equal(got, want) {
		t.Errorf("around = %q, want %q", got, want)
	}
	for _, c := range []struct {
		path, dir string
		want      bool
	}{
		{"/a", "/", true}, {"/", "/", true}, {"/a/b", "/a", true}, {"/a", "/a", true},
		{"/ab", "/a", false}, {"/a", "/a/b", false}, {"/b", "/a", false},
	} {
		if got := under(c.path, c.dir); got != c.want || got != within(c.path, c.dir) {
			t.Errorf("under(%q, %q) = %v, want %v (as within)", c.path, c.dir, got, c.want)
		}
	}
}
