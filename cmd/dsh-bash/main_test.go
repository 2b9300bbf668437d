//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash"
)

// binary is dsh-bash built without the race detector, which most tests
// start; raceBinary is dsh-bash built as the tests are (with -race under
// go test -race; binary itself otherwise), which a few start.
var binary, raceBinary string

// TestMain builds dsh-bash once; the tests run it as users do.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dsh-bash-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "dsh-bash")
	proctest.QuickRaceExit()
	proctest.RaiseParallel(4)
	// A race-built dsh-bash costs some 70 ms of CPU more at each of the
	// hundreds of starts of these tests, and several times the CPU for
	// the work a server does; built so, the package's tests took 122
	// CPU-seconds against 72 with a plain build. The code a server runs
	// is checked for races in its own packages (mcpserver, toolbash, the
	// executors), under the tests' own race detector; here a few tests
	// start the race-built binary (raceCommand) to check its wiring: an
	// HTTP server with its sessions and a stdio session with tasks and
	// input.
	raceBinary = binary
	if proctest.Race {
		raceBinary = filepath.Join(dir, "dsh-bash-race")
	}
	// The jails start a plain agent: a race-built dsh-bash costs twice
	// the CPU at each of some ninety jail starts. The agent's code is
	// checked for races by bash/sandbox's tests, and dsh-bash as its own
	// agent by TestSelfAgent.
	agent := filepath.Join(dir, "agent")
	builds := map[string]build{
		binary: {pkg: "."},
		agent:  {pkg: "../../bash/sandbox/internal/agent"},
	}
	if raceBinary != binary {
		builds[raceBinary] = build{pkg: ".", flags: proctest.BuildFlags()}
	}
	if err := buildAll(builds); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("DSH_BASH_AGENT", agent)
	// The tests of this package that are not about the sandbox write pid
	// files and FIFOs in their own temporary directories, which a jail's
	// private /tmp hides; the sandbox's own tests ask for it by flag.
	os.Setenv("DSH_BASH_SANDBOX", "off")
	// A configuration file of the machine's user must not change the tests.
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Unsetenv("DSH_BASH_CONFIG")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build is a program to build: its package and go build flags.
type build struct {
	pkg   string
	flags []string
}

// buildAll builds the programs at once (each a link of tens of megabytes,
// mostly on one core, where the build cache does not have it), each at
// its path, and says which failed and why.
func buildAll(builds map[string]build) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	errs := make(chan error, len(builds))
	for path, b := range builds {
		go func() { errs <- proctest.Build(ctx, path, b.pkg, b.flags...) }()
	}
	var all []error
	for range builds {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// placeBinary puts dsh-bash at path, as a hard link where it can, else a
// copy (proctest.CopyProgram: no child another test forks meanwhile may
// hold it open for writing, which would fail its exec "text file busy").
func placeBinary(t *testing.T, path string) {
	t.Helper()
	if os.Link(binary, path) == nil {
		return
	}
	if err := proctest.CopyProgram(binary, path); err != nil {
		t.Fatal(err)
	}
}

func dshBash(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	// Spill files kept by run go away with the test.
	return dshBashEnv(t, dir, []string{"TMPDIR=" + t.TempDir()}, args...)
}

// dshBashEnv runs dsh-bash in dir with env added to the environment.
func dshBashEnv(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runBinary(t, binary, dir, env, args...)
}

// runBinary runs bin, a build of dsh-bash, in dir with env added to the
// environment.
func runBinary(t *testing.T, bin, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := run(t, cmd)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// withoutOthersCgroups drops from a dsh-bash's stderr the lines saying it
// removed a cgroup left behind by a killed dsh-bash, for a test that
// matches stderr whole: cgroups are shared by every test of the run, and
// the first dsh-bash to start after a test killed one (on purpose)
// cleans them up, whichever test started it. Everything else a test's
// dsh-bash cleans is in its own TMPDIR.
func withoutOthersCgroups(stderr string) string {
	var b strings.Builder
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, ": removed /sys/fs/cgroup/") || !strings.HasSuffix(line, ", left behind by a dsh-bash that was killed\n") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// run runs cmd and returns what Wait returned; if it has not exited
// within testwait.Limit, it is killed and the test fails.
func run(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return testwait.Exit(t, cmd, fmt.Sprintf("%s %q", filepath.Base(cmd.Path), cmd.Args[1:]))
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	tests := []struct {
		name   string
		args   []string
		stdout string
		code   int
	}{
		{"stdout", []string{"run", "--", "echo", "hello"}, "hello\n", 0},
		{"one quoted command", []string{"run", "--", "echo out; echo err >&2; exit 3"}, "out\n[stderr]\nerr\n[exit code: 3]", 0},
		{"no output", []string{"run", "--", "true"}, "(no output)", 0},
		{"cwd", []string{"run", "--", "pwd"}, dir + "\n", 0},
		{"relative workdir", []string{"run", "--workdir", "sub", "--", "pwd"}, filepath.Join(dir, "sub") + "\n", 0},
		{"timeout", []string{"run", "--timeout-ms", "200", "--", "sleep 30"}, "(no output)\n[timed out after 200ms]\n[killed by signal: SIGTERM]", 0},
		{"max timeout caps", []string{"run", "--max-timeout-ms", "150", "--timeout-ms", "60000", "--", "sleep 30"}, "(no output)\n[timed out after 150ms]\n[killed by signal: SIGTERM]", 0},
		{"default timeout", []string{"run", "--default-timeout-ms", "100", "--", "sleep 30"}, "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]", 0},
		{"bad workdir is a tool failure", []string{"run", "--workdir", "/nonexistent/dsh", "--", "true"}, "working directory /nonexistent/dsh does not exist", 1},
		{"bad timeout", []string{"run", "--timeout-ms", "-5", "--", "true"}, "invalid timeoutMs: expected a positive number, got -5", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := dshBash(t, dir, tc.args...)
			if stdout != tc.stdout || code != tc.code {
				t.Errorf("stdout %q exit %d (stderr %q); want %q exit %d", stdout, code, stderr, tc.stdout, tc.code)
			}
		})
	}
}

func TestRunTruncatedKeepsSpill(t *testing.T) {
	t.Parallel()
	stdout, _, code := dshBash(t, t.TempDir(), "run", "--max-output-bytes", "10", "--", "seq 1000")
	prefix := "999\n1000\n[output truncated; full output: "
	if code != 0 || !strings.HasPrefix(stdout, prefix) {
		t.Fatalf("%q", stdout)
	}
	path := strings.TrimSuffix(strings.TrimPrefix(stdout, prefix), "]")
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(b), "1\n2\n3\n") || len(b) != 3893 {
		t.Errorf("spill file %s after exit: %d bytes, %v", path, len(b), err)
	}
	os.RemoveAll(filepath.Dir(filepath.Dir(path))) // the run's spill directory
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"nope"}, {"run"}, {"run", "--bogus", "x"}, {"schema", "extra"}} {
		if _, stderr, code := dshBash(t, "", args...); code != 2 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	stdout, _, code := dshBash(t, "", "schema")
	if code != 0 {
		t.Fatal(code)
	}
	var defs []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
		Annotations map[string]any `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(stdout), &defs); err != nil {
		t.Fatal(err)
	}
	tb := (&toolbash.Tools{}).List()
	if len(defs) != len(tb) || len(defs) != 5 {
		t.Fatalf("%d definitions", len(defs))
	}
	for i, d := range defs {
		if d.Name != tb[i].Name || d.Description != tb[i].Description || d.InputSchema["type"] != "object" {
			t.Errorf("definition %d: %s", i, d.Name)
		}
	}
	props := defs[0].InputSchema["properties"].(map[string]any)
	for _, p := range []string{"command", "description", "timeoutMs", "workdir", "run_in_background", "input"} {
		if props[p] == nil {
			t.Errorf("bash schema lacks %s", p)
		}
	}
	if defs[0].Annotations["destructiveHint"] != true || defs[1].Annotations["readOnlyHint"] != true {
		t.Errorf("annotations %v %v", defs[0].Annotations, defs[1].Annotations)
	}
	if strings.Contains(stdout, `\u0026`) {
		t.Error("schema output escapes HTML characters")
	}
}

// TestSignalStopsEverything: SIGTERM to dsh-bash run aborts the command and
// no process of it outlives the binary.
func TestSignalStopsEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "sync")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	pids := filepath.Join(dir, "pids")
	cmd := exec.Command(binary, "run", "--", fmt.Sprintf("sleep 30 & echo $! > %s; (setsid sleep 31 & echo $! >> %s; echo > %s; wait) & wait", pids, pids, fifo))
	var o bytes.Buffer
	cmd.Stdout = &o
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testwait.ReadFIFO(t, fifo, "sign that the command runs")
	cmd.Process.Signal(syscall.SIGTERM)
	err := testwait.Exit(t, cmd, "dsh-bash run, after SIGTERM")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || o.String() != "command aborted" {
		t.Errorf("exit %v, stdout %q", err, o.String())
	}
	b, _ := os.ReadFile(pids)
	for _, s := range strings.Fields(string(b)) {
		if pid, _ := strconv.Atoi(s); proctest.Alive(pid) {
			t.Errorf("process %d outlived dsh-bash", pid)
		}
	}
}

// TestBadFlagShort: a bad flag is named, with one line saying where the
// help is, not the whole flag list.
func TestBadFlagShort(t *testing.T) {
	t.Parallel()
	out, errOut, code := dshBash(t, t.TempDir(), "run", "--bogus", "--", "true")
	want := "flag provided but not defined: -bogus\ndsh-bash run: run 'dsh-bash run -h' for its flags, 'dsh-bash help' for the commands\n"
	if code != 2 || out != "" || errOut != want {
		t.Errorf("bad flag: exit %d, stdout %q, stderr %q; want stderr %q", code, out, errOut, want)
	}
}

// TestHelpExitsZero: -h and --help, of dsh-bash and of every command, print
// the usage on stdout and exit 0, as asking for help is no error.
func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"mcp", "-h"}, {"mcp", "--help"}, {"acp", "-h"}, {"run", "-h"},
		{"executor", "-h"}, {"doctor", "--help"}, {"schema", "-h"}} {
		out, errOut, code := dshBash(t, t.TempDir(), args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the usage on stdout, exit 0", args, code, out, errOut)
		}
	}
	if out, _, _ := dshBash(t, t.TempDir(), "mcp", "-h"); !strings.HasPrefix(out, "usage of dsh-bash mcp:\n") || !strings.Contains(out, "-sandbox-memory") {
		t.Errorf("mcp -h: %q", out)
	}
}

// TestUsageNamesEveryFlag: the top-level help names every flag of every
// command, so that no flag is found only by reading a command's -h.
func TestUsageNamesEveryFlag(t *testing.T) {
	t.Parallel()
	usageText, _, _ := dshBash(t, "", "-h")
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	for _, cmd := range []string{"mcp", "acp", "run", "executor", "doctor"} {
		help, _, _ := dshBash(t, "", cmd, "-h")
		for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
			if !strings.Contains(usageText, "--"+m[1]) {
				t.Errorf("dsh-bash %s has --%s, which the top-level help does not name", cmd, m[1])
			}
		}
	}
}

// TestBadFlagValues: a flag value the executor would refuse is a usage
// error (exit 2) that names the flag, not the Go option it sets.
func TestBadFlagValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-output-bytes", "-1"}, "--max-output-bytes must not be negative (got -1)"},
		{[]string{"--default-timeout-ms", "-1"}, "--default-timeout-ms must not be negative"},
		{[]string{"--max-timeout-ms", "-5"}, "--max-timeout-ms must not be negative"},
		{[]string{"--grace-ms", "-1"}, "--grace-ms must not be negative"},
		{[]string{"--drain-delay-ms", "-1"}, "--drain-delay-ms must not be negative"},
		{[]string{"--max-tasks", "-1"}, "--max-tasks must not be negative"},
		{[]string{"--max-tasks-per-session", "-1"}, "--max-tasks-per-session must not be negative"},
		{[]string{"--max-result-chars", "-1"}, "--max-result-chars must not be negative"},
		{[]string{"--max-timeout-ms", "9999999999999999"}, "--max-timeout-ms must be at most"},
		{[]string{"--default-timeout-ms", "2000", "--max-timeout-ms", "1000"}, "--default-timeout-ms 2000 is above --max-timeout-ms 1000"},
		{[]string{"--env", "NOEQUALS"}, `--env "NOEQUALS" is not NAME=VALUE`},
		{[]string{"--sandbox=on", "--sandbox-warm", "-1"}, "--sandbox-warm must not be negative (got -1)"},
	} {
		for _, cmd := range [][]string{{"run"}, {"mcp"}} {
			args := append(append(cmd, tc.args...), "--", "true")
			if cmd[0] == "mcp" {
				args = args[:len(args)-2]
			}
			out, errOut, code := dshBash(t, t.TempDir(), args...)
			if code != 2 || out != "" || !strings.Contains(errOut, "dsh-bash "+cmd[0]+": "+tc.want) || strings.Contains(errOut, "invalid executor options") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errOut, tc.want)
			}
		}
	}
}

// TestSelfAgent: without $DSH_BASH_AGENT, each jail's agent is dsh-bash
// itself, started again (what users run).
func TestSelfAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errOut, code := dshBashEnv(t, dir, []string{"DSH_BASH_AGENT=", "TMPDIR=" + t.TempDir()}, "run", "--sandbox=on", "--", "echo jailed; cat /proc/1/cmdline | tr '\\0' ' '")
	if code != 0 || !strings.HasPrefix(out, "jailed\n") {
		t.Fatalf("exit %d: %q %q", code, out, errOut)
	}
	if os.Getenv("CI") == "true" && !strings.Contains(out, "__dsh_sandbox_agent") {
		t.Errorf("the jail's first process is not dsh-bash as its agent: %q", out)
	}
}
