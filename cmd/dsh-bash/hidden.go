package main

import (
	"path/filepath"
	"strings"
)

// inside reports whether path is dir or lies under it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
