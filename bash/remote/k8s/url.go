package k8s

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseURL reads k8s://NAMESPACE[/workspace]. It returns the namespace and
// the workspace (the path, "" for none).
func ParseURL(raw string) (namespace, workspace string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("remote %q: %w", raw, err)
	}
	if u.Scheme != "k8s" || u.Host == "" || u.Opaque != "" || u.User != nil || u.Port() != "" {
		return "", "", fmt.Errorf("remote %q: want k8s://NAMESPACE[/workspace]", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("remote %q: no query or fragment is taken", raw)
	}
	if errs := validation.IsDNS1123Label(u.Host); len(errs) > 0 {
		return "", "", fmt.Errorf("remote %q: namespace %q: %s", raw, u.Host, strings.Join(errs, "; "))
	}
	ws := u.Path
	if ws == "/" {
		ws = ""
	}
	return u.Host, ws, nil
}

// IsURL reports whether raw is a k8s:// URL.
func IsURL(raw string) bool { return strings.HasPrefix(raw, "k8s://") }
