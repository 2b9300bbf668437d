//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The attacks of this file are a jailed command's attempts to reach the
// server that jails it, to open a session of its own whose workspace (its
// client's root) is anywhere it likes, outside its jail.

// initialize is an MCP initialize request, as curl posts it.
const initialize = `curl -s -m 5 -o /dev/null -w 'status %{http_code}\n' -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' ` +
	`-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"jail","version":"0"}}}'`

// requireCurl skips a test without curl, except under CI, which installs
// it.
func requireCurl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("curl is not installed")
	}
}

// writeSecret writes a 0600 file, making its directories.
func writeSecret(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestJailCannotReadServerToken: the bearer token, wherever it is (a
// --token-file in ~/.config/dsh or elsewhere, or the generated one under a
// TMPDIR outside /tmp, which a jail's private /tmp does not cover), cannot
// be read in a jail, so a jailed command cannot open a session.
func TestJailCannotReadServerToken(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	requireCurl(t)
	home := t.TempDir()
	inConfig := filepath.Join(home, ".config", "dsh", "token")
	// Outside /tmp, which the jails' private /tmp covers already.
	varTmp, err := os.MkdirTemp("/var/tmp", "dsh-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(varTmp) })
	elsewhere := filepath.Join(varTmp, "secrets", "token")
	genTmp := filepath.Join(varTmp, "tmp")
	if err := os.Mkdir(genTmp, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file string // "": generated
		env  []string
	}{
		{"config dir", inConfig, nil},
		{"elsewhere", elsewhere, nil},
		{"generated under /var/tmp", "", []string{"TMPDIR=" + genTmp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			token, args := "", []string{"--http", "127.0.0.1:0"}
			if tc.file != "" {
				token = "a-token-" + strings.ReplaceAll(tc.name, " ", "-") + "-0123456789"
				writeSecret(t, tc.file, token+"\n")
				args = append(args, "--token-file", tc.file)
			}
			env := append([]string{"HOME=" + home}, tc.env...)
			ws := t.TempDir()
			s := startHTTP(t, env, append([]string{"--sandbox=on", "--cwd", ws}, args...)...)
			path := tc.file
			if path == "" {
				path = s.tokenPath(t)
			}
			cs := mustClient(t, s, tokenIn(t, path))
			got := callText(t, cs, "bash", map[string]any{"description": "Steal the token",
				"command": "cat " + path + "; " + initialize + ` -H "Authorization: Bearer $(cat ` + path + `)" ` + s.where})
			if strings.Contains(got, tokenIn(t, path)) || !strings.Contains(got, "status 401") {
				t.Errorf("a jailed command read the token %s or opened a session: %q", path, got)
			}
		})
	}
}

// TestJailCannotReachUnixSocket: a server on unix:PATH without a token,
// even with its socket inside the workspace, cannot be reached from a
// jail: the socket is covered.
func TestJailCannotReachUnixSocket(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	requireCurl(t)
	ws := t.TempDir()
	sock := filepath.Join(ws, "dsh.sock")
	s := startHTTP(t, nil, "--sandbox=on", "--cwd", ws, "--http", "unix:"+sock, "--no-auth", "--sandbox-network=off")
	cs := mustClient(t, s, "")
	got := callText(t, cs, "bash", map[string]any{"description": "Reach the server",
		"command": initialize + " --unix-socket " + sock + " http://localhost/; echo curl exit $?"})
	if strings.Contains(got, "status 200") || strings.Contains(got, "curl exit 0") {
		t.Errorf("a jailed command reached the server's socket: %q", got)
	}
}

// TestNoAuthPortRefusedWithNetwork: --no-auth on a TCP port, which every
// jail that shares the host's network could reach, is refused; with the
// jails' network off it serves, and a jail's loopback is not the host's.
func TestNoAuthPortRefusedWithNetwork(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	requireCurl(t)
	_, errOut, code := dshBash(t, t.TempDir(), "mcp", "--sandbox=on", "--http", "127.0.0.1:0", "--no-auth")
	if code != 2 || !strings.Contains(errOut, "--no-auth on a TCP port is refused while sandboxed commands have the network") {
		t.Errorf("--no-auth with the network: exit %d, stderr %q; want it refused", code, errOut)
	}
	ws := t.TempDir()
	s := startHTTP(t, nil, "--sandbox=on", "--cwd", ws, "--http", "127.0.0.1:0", "--no-auth", "--sandbox-network=off")
	cs := mustClient(t, s, "")
	got := callText(t, cs, "bash", map[string]any{"description": "Reach the server",
		"command": initialize + " " + s.where + "; echo curl exit $?"})
	if strings.Contains(got, "status 200") || strings.Contains(got, "curl exit 0") {
		t.Errorf("a jail without network reached the server's port: %q", got)
	}
}

// TestJailCannotReadConfig: dsh-bash's configuration file (its permission
// rules, remote hosts and sandbox), wherever --config puts it, and its
// configuration directory are hidden from jails, which can neither read
// nor change them.
func TestJailCannotReadConfig(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	ws := t.TempDir()
	conf := filepath.Join(ws, "dsh.json")
	if err := os.WriteFile(conf, []byte(`{"sandbox": {"mode": "on"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	xdg, err := os.MkdirTemp("/var/tmp", "dsh-test-") // outside the jails' private /tmp
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(xdg) })
	writeSecret(t, filepath.Join(xdg, "dsh", "other.json"), "secret-in-config-dir")
	out, errOut, code := dshBashEnv(t, ws, []string{"XDG_CONFIG_HOME=" + xdg, "TMPDIR=" + t.TempDir()}, "run", "--sandbox=on", "--config", conf, "--",
		"cat dsh.json "+filepath.Join(xdg, "dsh", "other.json")+"; echo '{}' > dsh.json; echo wrote $?")
	if code != 0 || strings.Contains(out, "mode") || strings.Contains(out, "secret-in-config-dir") || strings.Contains(out, "wrote 0") {
		t.Errorf("exit %d, stdout %q, stderr %q: a jail read or changed the configuration", code, out, errOut)
	}
	if b, _ := os.ReadFile(conf); !strings.Contains(string(b), "mode") {
		t.Errorf("the configuration file was changed: %q", b)
	}
}

// TestServersShareNoFiles: two sandboxed stdio servers of one user, with
// one TMPDIR (as two MCP clients of one user start them): a command of the
// second cannot read the first's spill file, whose path the first's model
// was given, nor list the first's spill directory.
func TestServersShareNoFiles(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	tmp := t.TempDir()
	a := startRawMCPIn(t, tmp, "--sandbox=on", "--max-output-bytes", "1000")
	b := startRawMCPIn(t, tmp, "--sandbox=on")
	a.call(1, "seq 100000 | sed s/^/secret-/", false)
	ans := a.answer(1)
	path := regexp.MustCompile(`/[^ \]"]*stdout[^ \]"]*\.log`).FindString(ans)
	if path == "" {
		t.Fatalf("no spill path in the first server's answer: %s", ans)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Contains(b, []byte("secret-99999")) {
		t.Fatalf("the spill file %s does not hold the output (%v): the test cannot tell", path, err)
	}
	b.call(1, "cat "+path+" | grep -c secret-; ls "+filepath.Dir(filepath.Dir(path)), false)
	if got := b.answer(1); strings.Contains(got, "secret-") || !strings.Contains(got, "No such file or directory") {
		t.Errorf("the second server's command reached the first's spill file %s: %s", path, got)
	}
}
