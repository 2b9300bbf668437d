//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorHomeWorkspace: doctor started in the home directory under the
// sandbox says that sessions there will be refused, and why; with --cwd
// elsewhere, it does not.
func TestDoctorHomeWorkspace(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	home := t.TempDir()
	env := []string{"HOME=" + home, "DSH_BASH_SANDBOX=on"}
	out, errOut, code := runBinary(t, binary, home, env, "doctor")
	want := "workspace: " + home + ": REFUSED, a session there gets an error: it is or holds your home directory " + home
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "give --cwd DIR") {
		t.Errorf("doctor: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	if out, _, _ := runBinary(t, binary, home, env, "doctor", "--cwd", t.TempDir()); strings.Contains(out, "REFUSED") {
		t.Errorf("doctor --cwd elsewhere: %q", out)
	}
}

// TestDoctorRemote: with commands on a far side, doctor names each host,
// how it holds commands and the workspace there, instead of a containment
// of "remote: …" and "sandbox: not active".
func TestDoctorRemote(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	far := binary + " executor --sandbox=off"
	out, errOut, code := dshBash(t, t.TempDir(), "doctor", "--executor-cmd", far, "--remote-workspace", ws)
	host, _ := os.Hostname()
	for _, want := range []string{"commands run: on the remote host below, not on this machine\n", "remote host: `" + far + "` (host name " + host + ", dsh-bash executor pid ",
		"  containment there: cgroup: commands are NOT sandboxed there", "  workspace there: " + ws + "\n", "sandbox: the far side's"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("doctor: exit %d, no %q in stdout %q (stderr %q)", code, want, out, errOut)
		}
	}
	if strings.Contains(out, "containment: remote") || strings.Contains(out, "not active") {
		t.Errorf("doctor reads as if nothing were sandboxed anywhere: %q", out)
	}
	out, _, _ = dshBash(t, t.TempDir(), "doctor", "--executor-cmd", far, "--executor-cmd", far)
	if strings.Count(out, "remote host: ") != 2 || !strings.Contains(out, "on one of the 2 remote hosts below") {
		t.Errorf("doctor of a fleet: %q", out)
	}
}

// TestDoctorSaysWhy: a configuration doctor cannot make an executor with
// is reported in its report, on stdout, with the reason.
func TestDoctorSaysWhy(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(cfg, []byte(`{"sandbox": {"mode": "bogus"}}`), 0o600)
	out, errOut, code := dshBash(t, t.TempDir(), "doctor", "--config", cfg)
	want := "executor: cannot be made with these settings: config " + cfg + `: line 1: sandbox.mode must be auto, on, off (got "bogus")` + "\n"
	if code != 2 || !strings.HasSuffix(out, want) || errOut != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and stdout ending %q", code, out, errOut, want)
	}
}

// TestDoctorPaths: dsh-bash's configuration directory is hidden, and
// listed, once (its file within it not again), and the configured paths
// that do not exist are named, not dropped without a word.
func TestDoctorPaths(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "dsh")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"sandbox": {"hidden": ["~/nowhere"], "writable": ["/nonexistent/dsh-w"]}}`), 0o600)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "DSH_BASH_SANDBOX=on"}
	out, errOut, code := runBinary(t, binary, t.TempDir(), env, "doctor")
	if code != 0 || strings.Count(out, "  "+dir+"\n") != 1 || strings.Contains(out, "config.json") {
		t.Errorf("exit %d, stdout %q (stderr %q); want %s listed once, and not its file", code, out, errOut, dir)
	}
	want := "configured but not found, so skipped (the start of each session looks again):\n  /nonexistent/dsh-w (writable)\n  " + filepath.Join(home, "nowhere") + " (hidden)\n"
	if !strings.Contains(out, want) {
		t.Errorf("stdout %q; want %q", out, want)
	}
}
