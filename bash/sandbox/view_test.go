//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLandlockViewNotHidden: the Landlock layer's view lists as not hidden
// (nor read-only) the policy's paths within a writable one, the workspace
// or a cache, and no other; a workspace no session may have (the home
// directory) makes nothing writable.
func TestLandlockViewNotHidden(t *testing.T) {
	t.Parallel()
	home, ws, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	inWS, inCache, ro := filepath.Join(ws, "secret"), filepath.Join(home, ".cache", "secret"), filepath.Join(ws, "ro")
	for _, dir := range []string{inWS, inCache, ro, filepath.Join(home, ".ssh")} {
		os.MkdirAll(dir, 0o700)
	}
	e, err := newSandbox(t, &Options{Layer: LayerLandlock,
		Policy: Policy{Home: home, Hidden: []string{inWS, inCache, elsewhere}, ReadOnly: []string{ro, elsewhere}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v := e.View(ws, nil)
	if want := []string{inWS, inCache}; !slices.Equal(v.NotHidden, want) {
		t.Errorf("not hidden: %q, want %q", v.NotHidden, want)
	}
	if want := []string{ro}; !slices.Equal(v.NotReadOnly, want) {
		t.Errorf("not read-only: %q, want %q", v.NotReadOnly, want)
	}
	for _, p := range []string{elsewhere, filepath.Join(home, ".ssh")} {
		if !slices.Contains(v.Hidden, p) {
			t.Errorf("hidden: %q lacks %s", v.Hidden, p)
		}
	}
	for _, p := range v.NotHidden {
		if slices.Contains(v.Hidden, p) {
			t.Errorf("hidden: %q holds %s, which is not", v.Hidden, p)
		}
	}
	if v := e.View(home, nil); !slices.Equal(v.NotHidden, []string{inCache}) {
		t.Errorf("with the home directory as the workspace, not hidden: %q, want only the cache's %s", v.NotHidden, inCache)
	}
}
