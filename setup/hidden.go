package setup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dshgo/dsh/bash/sandbox"
)

// NotHidden are the paths that neither the sandbox's own list of hidden
// paths in the home directory nor another of paths holds: to add to
// Sandbox.Hidden so that each is hidden once, and listed once.
func NotHidden(paths []string) []string {
	var covers []string
	if home := os.Getenv("HOME"); home != "" && home != "/" { // as the sandbox finds it
		for _, rel := range sandbox.HiddenHomePaths() {
			covers = append(covers, filepath.Join(home, rel))
		}
	}
	paths = slices.Compact(slices.Sorted(slices.Values(paths)))
	var out []string
	for i, p := range paths {
		others := append(slices.Clone(covers), slices.Delete(slices.Clone(paths), i, i+1)...)
		if !slices.ContainsFunc(others, func(dir string) bool { return inside(p, dir) }) {
			out = append(out, p)
		}
	}
	return out
}

// inside reports whether path is dir or lies under it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
