package k8stest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// noScriptsError says where shared/k8s was looked for.
type noScriptsError struct {
	name  string
	tried []string
}

func (e *noScriptsError) Error() string {
	return "shared/k8s/" + e.name + " is in none of " + strings.Join(e.tried, ", ") + " (set $DSH_SHARED to the shared directory)"
}

// sharedScript finds shared/k8s/NAME.
func sharedScript(name string) (string, error) {
	var dirs []string
	if d := os.Getenv("DSH_SHARED"); d != "" {
		dirs = append(dirs, d)
	}
	if root, err := moduleRoot(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(root), "shared"))
	}
	dirs = append(dirs, "/work/shared")
	var tried []string
	for _, d := range dirs {
		p := filepath.Join(d, "k8s", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", &noScriptsError{name, tried}
}

// moduleRoot is the directory of the go.mod above the working directory,
// which is a package's directory when go test runs it.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
