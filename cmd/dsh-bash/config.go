package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/dshgo/dsh/egress"
)

// config is dsh-bash's configuration file: JSON, by default
// $XDG_CONFIG_HOME/dsh/config.json (~/.config/dsh/config.json). Flags
// override it; list flags add to its lists.
type config struct {
	Sandbox     sandboxConfig    `json:"sandbox"`
	Remote      remoteConfig     `json:"remote"`
	Permissions permissionConfig `json:"permissions"`
	Metrics     metricsConfig    `json:"metrics"`
	HTTP        httpConfig       `json:"http"`
	Audit       auditConfig      `json:"audit"`
}

// remoteConfig is the file's "remote" object: hosts where commands run
// (a fleet when more than one), as --remote and --executor-cmd give them.
type remoteConfig struct {
	Hosts        []string  `json:"hosts"`        // ssh:// URLs, or one k8s:// URL
	ExecutorCmds []string  `json:"executorCmds"` // programs whose stdio reaches dsh-bash executor
	Workspace    string    `json:"workspace"`
	Command      string    `json:"command"`
	Upload       bool      `json:"upload"`
	K8s          k8sConfig `json:"k8s"`
}

// k8sConfig is the "remote" object's "k8s": as --k8s-template, --k8s-warm
// and --kubeconfig.
type k8sConfig struct {
	Template   string `json:"template"`
	Warm       int    `json:"warm"`
	Kubeconfig string `json:"kubeconfig"`
}

// sandboxConfig is the file's "sandbox" object; a missing field keeps the
// default.
type sandboxConfig struct {
	Mode    string `json:"mode"`    // auto, on, off
	Network string `json:"network"` // on, off, allowlist
	// The allowlist's, as --allow-domain, --deny-domain and
	// --default-domains give them.
	AllowDomains   []string `json:"allowDomains"`
	DenyDomains    []string `json:"denyDomains"`
	DefaultDomains *bool    `json:"defaultDomains"`
	LockCaches     bool     `json:"lockCaches"`
	Writable       []string `json:"writable"`
	ReadOnly       []string `json:"readOnly"`
	Hidden         []string `json:"hidden"`
	Memory         string   `json:"memory"` // as --sandbox-memory
	Pids           int      `json:"pids"`   // as --sandbox-pids
	Tmp            string   `json:"tmp"`    // as --sandbox-tmp
	Escape         string   `json:"escape"` // as --sandbox-escape
	Warm           int      `json:"warm"`   // as --sandbox-warm
}

// configPath is the file read when neither --config nor $DSH_BASH_CONFIG
// names one ("" when the system has no configuration directory).
func defaultConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "dsh", "config.json")
}

// loadConfig reads the configuration file at path. A missing file is an
// error only when it was named (explicit); otherwise it is the empty
// configuration.
func loadConfig(path string, explicit bool) (*config, error) {
	c := &config{}
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := decodeConfig(b, c); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Sandbox.expand(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Sandbox.check(b); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Remote.K8s.expand(b); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Permissions.check(b); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.HTTP.check(b); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Audit.expand(b); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// check refuses values of the sandbox object that no flag would take,
// naming the field and its line in b.
func (s *sandboxConfig) check(b []byte) error {
	for _, f := range []struct {
		key, value string
		allowed    []string
	}{{"mode", s.Mode, []string{"auto", "on", "off"}}, {"network", s.Network, []string{"on", "off", "allowlist"}}} {
		if f.value != "" && !slices.Contains(f.allowed, f.value) {
			return fmt.Errorf("line %d: sandbox.%s must be %s (got %q)", keyLine(b, f.key), f.key, strings.Join(f.allowed, ", "), f.value)
		}
	}
	for key, rules := range map[string][]string{"allowDomains": s.AllowDomains, "denyDomains": s.DenyDomains} {
		if err := egress.CheckRules(rules); err != nil {
			return fmt.Errorf("line %d: sandbox.%s: %w", keyLine(b, key), key, err)
		}
	}
	return nil
}

// keyLine is the line of the first "key": in b (1 if none).
func keyLine(b []byte, key string) int {
	m := regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `"\s*:`).FindIndex(b)
	if m == nil {
		return 1
	}
	return 1 + bytes.Count(b[:m[0]], []byte("\n"))
}

// unknownField is the field a strict decoder's error names.
var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// decodeConfig decodes one JSON object strictly: an unknown field (a typo)
// or trailing data is an error, not silently ignored.
func decodeConfig(b []byte, c *config) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(c); err != nil {
		return lineOf(b, d, err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the configuration object")
	}
	return nil
}

// lineOf adds the line of a syntax or type error to it.
func lineOf(b []byte, d *json.Decoder, err error) error {
	off := d.InputOffset()
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	line := 1 + bytes.Count(b[:min(int(off), len(b))], []byte("\n"))
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		line = keyLine(b, m[1]) // the decoder stops at the object's end
	}
	return fmt.Errorf("line %d: %w", line, err)
}

// expand makes every path of the sandbox's lists absolute: ~ and ~/… are the
// home directory; a relative path is an error (relative to what?).
func (s *sandboxConfig) expand() error {
	for _, list := range []*[]string{&s.Writable, &s.ReadOnly, &s.Hidden} {
		for i, p := range *list {
			abs, err := expandPath(p)
			if err != nil {
				return err
			}
			(*list)[i] = abs
		}
	}
	return nil
}

// expand makes the k8s object's paths absolute, as the sandbox's.
func (k *k8sConfig) expand(b []byte) error {
	for key, p := range map[string]*string{"template": &k.Template, "kubeconfig": &k.Kubeconfig} {
		if *p == "" {
			continue
		}
		abs, err := expandPath(*p)
		if err != nil {
			return fmt.Errorf("line %d: remote.k8s.%s: %w", keyLine(b, key), key, err)
		}
		*p = abs
	}
	return nil
}

// expandPath expands a leading ~ and requires an absolute path.
func expandPath(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("path %q: %w", p, err)
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute (start it with / or ~/)", p)
	}
	if strings.ContainsAny(p, "*?[") {
		// Taken as a name it would match nothing, and hide nothing.
		return "", fmt.Errorf("path %q has a wildcard: the sandbox takes paths, not patterns; name each path", p)
	}
	return filepath.Clean(p), nil
}
