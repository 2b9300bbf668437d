//go:build linux

package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	home, _ := os.UserHomeDir()
	tests := []struct {
		name, file string
		want       sandboxConfig
		err        string // a substring of the error; "" for none
	}{
		{name: "empty object", file: `{}`},
		{name: "all fields", file: `{"sandbox": {"mode": "on", "network": "off", "lockCaches": true,
			"writable": ["/srv/data", "~/scratch"], "readOnly": ["/srv/data/keep"], "hidden": ["~", "/opt/secret/"]}}`,
			want: sandboxConfig{Mode: "on", Network: "off", LockCaches: true,
				Writable: []string{"/srv/data", filepath.Join(home, "scratch")}, ReadOnly: []string{"/srv/data/keep"},
				Hidden: []string{home, "/opt/secret"}}},
		{name: "remote hosts", file: `{"remote": {"hosts": ["ssh://a/w", "ssh://b/w"], "upload": true}}`},
		{name: "kubernetes", file: `{"remote": {"hosts": ["k8s://agents/w"], "k8s": {"template": "~/pod.yaml", "warm": 2}}}`},
		{name: "warm jails", file: `{"sandbox": {"warm": 4}}`, want: sandboxConfig{Warm: 4}},
		{name: "kubernetes, relative template", file: "{\"remote\": {\"hosts\": [\"k8s://agents\"],\n\"k8s\": {\"template\": \"pod.yaml\"}}}", err: `line 2: remote.k8s.template: path "pod.yaml" is not absolute`},
		{name: "unknown field", file: "{\"sandbox\": {\n\"writeable\": []}}", err: `line 2: json: unknown field "writeable"`},
		{name: "unknown field, object closed later", file: "{\"sandbox\": {\n\"mode\": \"on\",\n\"writeable\": [],\n\"network\": \"on\"\n}\n}", err: `line 3: json: unknown field "writeable"`},
		{name: "bad mode", file: "{\"sandbox\": {\n\"mode\": \"yes\"}}", err: `line 2: sandbox.mode must be auto, on, off (got "yes")`},
		{name: "bad permissions default", file: "{\"permissions\": {\"defaults\": true,\n\"default\": \"deny\"}}", err: `line 2: permissions.default must be allow or ask (got "deny")`},
		{name: "bad network", file: `{"sandbox": {"network": "partly"}}`, err: `line 1: sandbox.network must be on, off, allowlist (got "partly")`},
		{name: "allowlist", file: `{"sandbox": {"network": "allowlist", "allowDomains": ["*.corp.example", "10.0.0.0/8"], "denyDomains": ["evil.example"], "defaultDomains": false}}`,
			want: sandboxConfig{Network: "allowlist", AllowDomains: []string{"*.corp.example", "10.0.0.0/8"}, DenyDomains: []string{"evil.example"}, DefaultDomains: new(false)}},
		{name: "bad domain", file: "{\"sandbox\": {\"network\": \"allowlist\",\n\"denyDomains\": [\"http://x.example\"]}}", err: `line 2: sandbox.denyDomains: egress: rule "http://x.example"`},
		{name: "wildcard", file: `{"sandbox": {"hidden": ["~/*.pem"]}}`, err: `has a wildcard`},
		{name: "syntax error", file: "{\"sandbox\":\n{\"mode\": on}}", err: "line 2: invalid character 'o'"},
		{name: "wrong type", file: "{\"sandbox\": {\"lockCaches\": \"yes\"}}", err: "line 1: json: cannot unmarshal string"},
		{name: "relative path", file: `{"sandbox": {"hidden": ["secrets"]}}`, err: `path "secrets" is not absolute`},
		{name: "user's home", file: `{"sandbox": {"hidden": ["~bob/x"]}}`, err: `path "~bob/x" is not absolute`},
		{name: "audit log", file: `{"audit": {"log": "~/dsh/audit.log"}}`},
		{name: "audit log, relative", file: "{\"audit\":\n{\"log\": \"audit.log\"}}", err: `line 2: audit.log: path "audit.log" is not absolute`},
		{name: "trailing data", file: `{} {}`, err: "data after the configuration object"},
		{name: "not an object", file: `[]`, err: "cannot unmarshal array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			os.WriteFile(path, []byte(tt.file), 0o600)
			c, err := loadConfig(path, true)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want one naming %s and containing %q", err, path, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Sandbox, tt.want) {
				t.Errorf("got %+v\nwant %+v", c.Sandbox, tt.want)
			}
		})
	}
}

func TestLoadConfigMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.json")
	if c, err := loadConfig(path, false); err != nil || !reflect.DeepEqual(c, &config{}) {
		t.Errorf("the default file, missing: %+v, %v; want the empty configuration", c, err)
	}
	if _, err := loadConfig(path, true); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a named file, missing: err = %v, want one naming it", err)
	}
}

// TestConfigPrecedence: a flag given wins over $DSH_BASH_SANDBOX, which wins
// over the file; the file's paths come first, then the flags'.
func TestConfigPrecedence(t *testing.T) {
	file := sandboxConfig{Mode: "on", Network: "off", Writable: []string{"/from/file"}, Warm: 3}
	tests := []struct {
		name, env string
		args      []string
		mode, net string
		writable  []string
		warm      int
	}{
		{"file only", "", nil, "on", "off", []string{"/from/file"}, 3},
		{"env over file", "off", nil, "off", "off", []string{"/from/file"}, 3},
		{"flags over both", "off", []string{"--sandbox=auto", "--sandbox-network=on", "--sandbox-writable=/from/flag", "--sandbox-warm=0"}, "auto", "on", []string{"/from/file", "/from/flag"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DSH_BASH_SANDBOX", tt.env)
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var f sandboxFlags
			f.register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			c := file
			c.Writable = append([]string(nil), file.Writable...)
			if err := f.merge(&c); err != nil {
				t.Fatal(err)
			}
			if f.mode != tt.mode || f.network != tt.net || !reflect.DeepEqual([]string(f.writable), tt.writable) || f.warm != tt.warm {
				t.Errorf("mode %q network %q writable %q warm %d; want %q %q %q %d", f.mode, f.network, f.writable, f.warm, tt.mode, tt.net, tt.writable, tt.warm)
			}
		})
	}
}

// TestConfigHides: a path the configuration file hides is hidden from a
// sandboxed command (and the same command reads it without the file).
func TestConfigHides(t *testing.T) {
	requireBwrap(t)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "private"), 0o755)
	os.WriteFile(filepath.Join(dir, "private", "key"), []byte("KEY-MATERIAL"), 0o600)
	cfg := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(cfg, []byte(`{"sandbox": {"hidden": [`+quote(filepath.Join(dir, "private"))+`]}}`), 0o600)
	out, _, _ := dshBash(t, dir, "run", "--sandbox=on", "--", "cat private/key")
	if !strings.Contains(out, "KEY-MATERIAL") {
		t.Fatalf("without the file the key is not readable, so the test cannot tell: %q", out)
	}
	out, errOut, _ := dshBash(t, dir, "run", "--sandbox=on", "--config", cfg, "--", "cat private/key")
	if strings.Contains(out, "KEY-MATERIAL") || !strings.Contains(out, "No such file") {
		t.Errorf("the hidden key was read: %q (stderr %q)", out, errOut)
	}
	_, errOut, code := dshBash(t, dir, "run", "--config", filepath.Join(dir, "missing.json"), "--", "true")
	if code == 0 || !strings.Contains(errOut, "missing.json") {
		t.Errorf("a missing --config file: exit %d, stderr %q; want an error naming it", code, errOut)
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// TestConfigRemote: a far side and its workspace named in the file are
// where commands run.
func TestConfigRemote(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.json")
	far := binary + " executor --sandbox=off"
	os.WriteFile(cfg, []byte(`{"remote": {"executorCmds": [`+quote(far)+`], "workspace": `+quote(dir)+`}}`), 0o600)
	out, errOut, code := dshBash(t, t.TempDir(), "run", "--config", cfg, "--", "pwd")
	if code != 0 || out != dir+"\n" {
		t.Errorf("run with a remote host from the file: %q (stderr %q, exit %d)", out, errOut, code)
	}
}
