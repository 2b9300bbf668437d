//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
)

// TestSandboxDiesWithServer: a process a sandboxed command left running
// (adopted as a task) dies with a dsh-bash that is SIGKILLed, which cannot
// clean up: the jail goes with the server, leaves nothing on disk, and
// the next dsh-bash removes the cgroups of its limits. Without the sandbox
// the leftover survives (until the next dsh-bash's start-up clean-up),
// which shows the test can tell.
//
// Not parallel: a dsh-bash starting meanwhile would clean up after the
// killed one, and the unsandboxed leftover would die of that.
func TestSandboxDiesWithServer(t *testing.T) {
	requireBwrap(t)
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			m := startRawMCP(t, "--sandbox="+mode)
			name := "dsh-survivor-" + mode + "-" + strconv.Itoa(os.Getpid())
			m.call(1, "(exec -a "+name+" sleep 300) > /dev/null 2>&1 & echo started", false)
			m.answer(1)
			pid := findByArgv0(t, name)
			m.cmd.Process.Kill()
			m.cmd.Wait()
			if mode == "off" {
				defer syscall.Kill(pid, syscall.SIGKILL)
				if !proctest.Alive(pid) {
					t.Fatal("without the sandbox the leftover died with dsh-bash: the test cannot tell")
				}
				return
			}
			if err := proctest.WaitExit(pid, 10*time.Second); err != nil {
				t.Errorf("the jailed leftover outlived dsh-bash: %v", err)
			}
			// Its /tmp was in memory: nothing of it is left on disk. What
			// is left, the limits' cgroup directories, goes at the next
			// start.
			if left, _ := filepath.Glob(filepath.Join(m.tmp, "dsh-jails-*")); len(left) > 0 {
				t.Errorf("the killed server left files on disk: %q", left)
			}
			_, errOut, _ := dshBashEnv(t, t.TempDir(), []string{"TMPDIR=" + m.tmp}, "run", "--", "true")
			removed := 0
			for line := range strings.Lines(errOut) {
				_, dir, ok := strings.Cut(strings.TrimSpace(line), "removed ")
				dir, _, _ = strings.Cut(dir, ",")
				if !ok || !strings.Contains(dir, "/dsh-limits-"+strconv.Itoa(m.cmd.Process.Pid)+"-") {
					continue
				}
				removed++
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("the next dsh-bash said it removed %s, which is still there", dir)
				}
			}
			if removed == 0 && os.Getenv("CI") == "true" {
				t.Errorf("the next dsh-bash removed none of the killed server's cgroups (stderr %q)", errOut)
			}
		})
	}
}

// requireBwrap skips a test without bubblewrap, except under CI, which
// installs it.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("bwrap is not installed")
	}
}

// requireLimits skips a test where the host lets no session limit apply,
// as doctor says, or there is no sandbox, unless CI=true: as package
// sandbox's tests do.
func requireLimits(t *testing.T) {
	t.Helper()
	out, errOut, code := dshBash(t, t.TempDir(), "doctor", "--sandbox=on")
	why := ""
	_, missing, _ := strings.Cut(out, "limits unavailable: ")
	switch missing, _, _ = strings.Cut(missing, "\n"); {
	case code != 0:
		why = "no sandbox here: " + errOut
	case missing != "":
		why = "limits unavailable here: " + missing
	default:
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// findByArgv0 finds the one process whose argv[0] is name.
func findByArgv0(t *testing.T, name string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		if argv0, _, _ := bytes.Cut(b, []byte{0}); string(argv0) == name {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatalf("no process named %s", name)
	return 0
}

// TestNestedSandbox: a dsh-bash run inside another's jail, where bwrap
// cannot make namespaces, refuses --sandbox=on at once, saying what bwrap
// said, instead of waiting for ever for a jail that never starts.
func TestNestedSandbox(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	ws := t.TempDir()
	// The jail has a /tmp of its own: the inner binary goes in the
	// workspace, which it sees.
	placeBinary(t, filepath.Join(ws, "dsh-bash"))
	// The inner one is its own agent: the plain one is in the host's /tmp.
	out, errOut, code := dshBash(t, ws, "run", "--sandbox=on", "--", "DSH_BASH_AGENT= ./dsh-bash run --sandbox=on -- echo inner; echo inner exit $?")
	if code != 0 || strings.Contains(out, "inner\n") || !strings.Contains(out, "bwrap:") || strings.Contains(out, "inner exit 0") {
		t.Errorf("nested: exit %d, stdout %q, stderr %q; want the inner run refused with what bwrap said", code, out, errOut)
	}
}

// TestSandboxRefusesWideWorkspace: a workspace of / (which hung the jail's
// agent, whose /proc was then the host's) or of the home directory is
// refused at once, as bad usage, with the reason in the user's words, and
// runs nothing.
func TestSandboxRefusesWideWorkspace(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/", home} {
		out, errOut, code := dshBash(t, dir, "run", "--sandbox=on", "--", "echo ran")
		errOut = withoutOthersCgroups(errOut)
		want := "dsh-bash run: the sandbox refuses the workspace " + dir + ": it is or holds your home directory " + home + ", which sandboxed commands could then change. Run it in a project directory, or name one with --cwd DIR\n"
		if code != 2 || out != "" || errOut != want {
			t.Errorf("in %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", dir, code, out, errOut, want)
		}
	}
}

// TestRunWorkdirOutsideCwd: the directory run's --workdir names, outside
// the current directory (here under /tmp, which jails have their own of),
// is the workspace: the command runs there, sandboxed, and its writes land
// there on the host.
func TestRunWorkdirOutsideCwd(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	dir := t.TempDir()
	out, errOut, code := dshBash(t, t.TempDir(), "run", "--sandbox=on", "--workdir", dir, "--", "pwd; echo x > made")
	if code != 0 || out != dir+"\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want it run in %s", code, out, errOut, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Errorf("the write did not land in the workdir: %v", err)
	}
}

// TestBadCwdIsUsageError: a --cwd that is no directory is a usage error
// (exit 2, saying which), never a reason to run without the sandbox.
func TestBadCwdIsUsageError(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, cmd := range []string{"mcp", "executor"} {
		for _, cwd := range []string{"/nonexistent", file} {
			out, errOut, code := dshBash(t, t.TempDir(), cmd, "--cwd", cwd)
			if code != 2 || !strings.HasPrefix(errOut, "dsh-bash "+cmd+": --cwd "+cwd+": ") || out != "" {
				t.Errorf("%s --cwd %s: exit %d, stdout %q, stderr %q; want a usage error", cmd, cwd, code, out, errOut)
			}
		}
	}
}

// TestSandboxInstructions: the MCP server tells the model what its
// sandbox allows: that the network is off, so it asks the user instead of
// waiting for a download to time out, and which paths are read-only.
func TestSandboxInstructions(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	m := startRawMCP(t, "--sandbox=on", "--sandbox-network=off", "--cwd", t.TempDir())
	for _, want := range []string{"Commands run in a sandbox", "The network is off", ".git/config and .git/hooks are read-only"} {
		if !strings.Contains(m.init, want) {
			t.Errorf("the instructions do not say %q: %s", want, m.init)
		}
	}
}

// TestDoctor: dsh-bash doctor says what a session gets with the same
// flags: the sandbox's layers, network and paths, or why there is none;
// --version says which dsh-bash this is.
func TestDoctor(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	ws, hide := t.TempDir(), t.TempDir()
	out, errOut, code := dshBash(t, ws, "doctor", "--sandbox=on", "--sandbox-network=off", "--sandbox-hide", hide)
	for _, want := range []string{"dsh-bash ", "sandbox: active (--sandbox=on)", "network: off", "writable:\n  " + ws + "\n", "hidden:\n", "  " + hide + "\n",
		"outside the sandbox: a call of acp or mcp may ask the user"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("doctor: exit %d, no %q in stdout %q (stderr %q)", code, want, out, errOut)
		}
	}
	// Without bwrap on PATH, auto is the Landlock layer, and doctor says
	// why, and what it does not cover.
	bin := t.TempDir()
	bashPath, err := exec.LookPath("bash")
	if err != nil || os.Symlink(bashPath, filepath.Join(bin, "bash")) != nil {
		t.Fatal("no bash to put on a PATH of its own")
	}
	out, errOut, code = dshBashEnv(t, ws, []string{"PATH=" + bin, "DSH_BASH_SANDBOX=auto"}, "doctor")
	if code != 0 || !strings.Contains(out, "sandbox: active (--sandbox=auto): the Landlock layer, without a jail (no bwrap") ||
		!strings.Contains(out, "not covered: ") || !strings.Contains(out, "\nuser namespaces: refused to commands\n") {
		t.Errorf("doctor without bwrap: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The allowlist: its rules, the defaults among them; and with the
	// Landlock layer, a refusal to start rather than an open network.
	out, errOut, code = dshBash(t, ws, "doctor", "--sandbox=jail", "--sandbox-network=allowlist", "--allow-domain", "*.corp.example", "--deny-domain", "gist.github.com", "--sandbox-escape=off")
	for _, want := range []string{"network: allowlist\n", "through 127.0.0.1:3128", "  proxy.golang.org\n", "  *.corp.example\n", "and refuses:\n  gist.github.com\n",
		"outside the sandbox: never (--sandbox-escape=off)\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("doctor --sandbox-network=allowlist: exit %d, no %q in stdout %q (stderr %q)", code, want, out, errOut)
		}
	}
	out, errOut, code = dshBash(t, ws, "doctor", "--sandbox=landlock", "--sandbox-network=allowlist")
	if code == 0 || !strings.Contains(out, "executor: cannot be made with these settings: the sandbox is unavailable: the network allowlist needs the jail") {
		t.Errorf("doctor --sandbox=landlock --sandbox-network=allowlist: exit %d, stdout %q, stderr %q; want a refusal", code, out, errOut)
	}
	out, errOut, code = dshBashEnv(t, ws, []string{"PATH=" + bin, "DSH_BASH_SANDBOX=auto"}, "doctor", "--sandbox-network=allowlist")
	if code == 0 || !strings.Contains(out, "the network allowlist needs the jail") {
		t.Errorf("doctor --sandbox=auto --sandbox-network=allowlist without bwrap: exit %d, stdout %q, stderr %q; want a refusal, not commands unsandboxed", code, out, errOut)
	}
	out, _, code = dshBash(t, ws, "--version")
	if code != 0 || !strings.HasPrefix(out, "dsh-bash ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestLandlockWarnsOnlyOfOverlaps: the Landlock layer warns at start of
// the hidden paths it cannot hide, those within a writable one, and of no
// other: none by default (dsh-bash's own configuration is hidden, and
// stays unreadable), one for a path hidden inside the workspace (which
// commands do read), none for one hidden elsewhere (which they cannot);
// doctor lists the one.
func TestLandlockWarnsOnlyOfOverlaps(t *testing.T) {
	t.Parallel()
	home, ws, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	config := filepath.Join(home, ".config", "dsh", "config.json")
	os.MkdirAll(filepath.Dir(config), 0o700)
	os.WriteFile(config, []byte("{}\n"), 0o600)
	os.Mkdir(filepath.Join(ws, "secret"), 0o700)
	os.WriteFile(filepath.Join(ws, "secret", "f"), []byte("IN-WORKSPACE\n"), 0o600)
	os.WriteFile(filepath.Join(elsewhere, "f"), []byte("ELSEWHERE\n"), 0o600)
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "TMPDIR=" + t.TempDir()}
	out, errOut, code := dshBashEnv(t, ws, env, "run", "--sandbox=landlock", "--", "cat "+config)
	if code == 1 && strings.Contains(errOut, "Landlock") && os.Getenv("CI") != "true" {
		t.Skipf("no Landlock layer here: %s", errOut)
	}
	if code != 0 || strings.Contains(errOut, "WARNING") || !strings.Contains(out, "Permission denied") {
		t.Errorf("by default: exit %d, stdout %q, stderr %q; want no warning, and the configuration hidden", code, out, errOut)
	}
	out, errOut, code = dshBashEnv(t, ws, env, "run", "--sandbox=landlock", "--sandbox-hide", "secret",
		"--sandbox-hide", elsewhere, "--", "cat secret/f; cat "+filepath.Join(elsewhere, "f"))
	warning := "WARNING: the Landlock layer cannot hide paths within writable ones (the workspace, the caches, --sandbox-writable); commands can read and change: " +
		filepath.Join(ws, "secret") + "\n"
	if code != 0 || !strings.Contains(errOut, warning) || strings.Count(errOut, "WARNING") != 1 ||
		!strings.Contains(out, "IN-WORKSPACE") || strings.Contains(out, "ELSEWHERE") {
		t.Errorf("hiding paths in and out of the workspace: exit %d, stdout %q, stderr %q; want a warning of %s alone", code, out, errOut, filepath.Join(ws, "secret"))
	}
	out, errOut, code = dshBashEnv(t, ws, env, "doctor", "--sandbox=landlock", "--sandbox-hide", "secret", "--sandbox-hide", elsewhere)
	if want := "not hidden, within a writable path (the Landlock layer cannot hide them):\n  " + filepath.Join(ws, "secret") + "\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("doctor: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
}

// TestSandboxMemoryLimit: --sandbox-memory bounds a session's memory, and
// the model reads that the limit ended the command; a bad size is a usage
// error.
func TestSandboxMemoryLimit(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	requireLimits(t)
	out, errOut, code := dshBash(t, t.TempDir(), "run", "--sandbox=on", "--sandbox-memory", "64M", "--", "head -c 300000000 /dev/zero | tail > /dev/null")
	if code != 0 || !strings.Contains(out, "[killed: memory limit 64 MiB reached]\n[exit code: 137]") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = dshBash(t, t.TempDir(), "run", "--sandbox=on", "--sandbox-memory", "lots", "--", "true")
	if code != 2 || !strings.Contains(errOut, `--sandbox-memory: "lots" is not a size`) {
		t.Errorf("bad size: exit %d, stderr %q", code, errOut)
	}
}

// TestSandboxTmpSize: --sandbox-tmp bounds a session's /tmp, and the
// config file's "tmp" does when the flag is not given; a bad size is a
// usage error.
func TestSandboxTmpSize(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	const fill = "head -c 40000000 /dev/zero > /tmp/big; du -m /tmp/big"
	out, errOut, code := dshBash(t, t.TempDir(), "run", "--sandbox=on", "--sandbox-tmp", "16M", "--", fill)
	if code != 0 || !strings.Contains(out, "No space left on device") || !strings.Contains(out, "16\t/tmp/big") {
		t.Errorf("--sandbox-tmp 16M: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"sandbox": {"tmp": "24M"}}`), 0o644)
	out, errOut, code = dshBash(t, dir, "run", "--sandbox=on", "--config", cfg, "--", fill)
	if code != 0 || !strings.Contains(out, "24\t/tmp/big") {
		t.Errorf("config tmp 24M: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = dshBash(t, t.TempDir(), "run", "--sandbox=on", "--sandbox-tmp", "big", "--", "true")
	if code != 2 || !strings.Contains(errOut, `--sandbox-tmp: "big" is not a size`) {
		t.Errorf("bad size: exit %d, stderr %q", code, errOut)
	}
}

// TestSandboxPathWildcardRefused: a pattern given as a sandbox path, which
// would hide nothing, is refused, saying so.
func TestSandboxPathWildcardRefused(t *testing.T) {
	t.Parallel()
	_, errOut, code := dshBash(t, t.TempDir(), "run", "--sandbox-hide", "*.pem", "--", "true")
	if code != 2 || !strings.Contains(errOut, "has a wildcard: the sandbox takes paths, not patterns") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestSandboxWhereNamespacesBlocked: where creating a user namespace
// fails (dsh-bash run inside bwrap --disable-userns, as inside a container
// whose seccomp profile refuses it), --sandbox=auto sandboxes with the
// Landlock layer and says so: a write outside the workspace and a read of
// ~/.ssh fail, a write in the workspace and to $TMPDIR work, and the text
// the model reads is the same as unsandboxed.
func TestSandboxWhereNamespacesBlocked(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	home, ws, outside := t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_test"), []byte("PRIVATE-KEY-MATERIAL\n"), 0o600)
	env := []string{"HOME=" + home, "TMPDIR=" + t.TempDir()}
	blocked := func(args ...string) (string, string, int) {
		cmd := exec.Command("bwrap", append([]string{"--dev-bind", "/", "/", "--unshare-user", "--disable-userns", "--", binary}, args...)...)
		cmd.Dir, cmd.Env = ws, append(os.Environ(), env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := run(t, cmd)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return out.String(), errOut.String(), code
	}
	script := "cat ~/.ssh/id_test; echo x > " + filepath.Join(outside, "planted") + "; echo in > inside && cat inside; echo t > $TMPDIR/t && cat $TMPDIR/t"
	out, errOut, code := blocked("run", "--sandbox=auto", "--", script)
	if strings.Contains(errOut, "bwrap: setting up uid map") || strings.Contains(errOut, "No permissions to create new namespace") {
		t.Skipf("the outer bwrap cannot run here: %s", errOut)
	}
	if !strings.Contains(errOut, "the sandbox is the Landlock layer, without a jail") {
		t.Errorf("stderr does not say which sandbox: %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil || strings.Contains(out, "PRIVATE") ||
		!strings.Contains(out, "in\nt\n") || code != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	const same = "echo hi; echo err >&2; exit 3"
	sandboxed, _, _ := blocked("run", "--sandbox=auto", "--", same)
	plain, _, _ := dshBashEnv(t, ws, env, "run", "--sandbox=off", "--", same)
	if sandboxed != plain {
		t.Errorf("the model's text differs: Landlock layer %q, unsandboxed %q", sandboxed, plain)
	}
	out, _, _ = blocked("doctor", "--sandbox=auto")
	if !strings.Contains(out, "sandbox: active (--sandbox=auto): the Landlock layer, without a jail (") {
		t.Errorf("doctor: %q", out)
	}
}

// TestSandboxWarm: with --sandbox-warm, dsh-bash claims a warm jail at
// its start (a pool that cannot work here is refused then) and keeps the
// pool; the call runs as it does without one, and the pool reports no
// trouble.
func TestSandboxWarm(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("a pool of jails needs root")
	}
	out, errOut, code := dshBash(t, t.TempDir(), "run", "--sandbox=jail", "--sandbox-warm", "1", "--", "echo hi")
	if code != 0 || out != "hi\n" || strings.Contains(errOut, "dsh-bash: sandbox:") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
