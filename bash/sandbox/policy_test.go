package sandbox

import (
	"slices"
	"testing"
)

// TestPolicyListsCopied: the policy's lists come as copies, so that no
// importer can change what every jail hides or leaves writable.
func TestPolicyListsCopied(t *testing.T) {
	for name, list := range map[string]func() []string{
		"HiddenHomePaths": HiddenHomePaths, "HiddenSystemPaths": HiddenSystemPaths,
		"CachePaths": CachePaths, "WorkspaceReadOnly": WorkspaceReadOnly, "ProxyEnv": ProxyEnv,
	} {
		want := list()
		if len(want) == 0 {
			t.Fatalf("%s is empty", name)
		}
		got := list()
		got[0] = "changed"
		if !slices.Equal(list(), want) {
			t.Errorf("changing what %s returned changed the policy: %q", name, list())
		}
	}
}
