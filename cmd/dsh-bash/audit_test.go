//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/dshgo/dsh/internal/testwait"
)

// TestAuditLogStartup: a path that cannot be written stops dsh-bash mcp
// and acp at start, naming it; the configuration file's audit.log is
// made at start, 0600.
func TestAuditLogStartup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, cmd := range []string{"mcp", "acp"} {
		args := []string{cmd, "--audit-log", filepath.Join(dir, "missing", "audit.log")}
		if cmd == "acp" {
			args = append(args, "--model", "m")
		}
		_, errOut, code := dshBash(t, dir, args...)
		want := "dsh-bash " + cmd + ": audit log: open " + dir + "/missing/audit.log: no such file or directory\n"
		if code != 1 || !strings.HasSuffix(withoutOthersCgroups(errOut), want) {
			t.Errorf("%s with an unwritable --audit-log: exit %d, stderr %q; want exit 1 and %q", cmd, code, errOut, want)
		}
	}
	config, log := filepath.Join(dir, "config.json"), filepath.Join(dir, "from-config.log")
	os.WriteFile(config, []byte(`{"audit": {"log": "`+log+`"}}`), 0o600)
	if _, errOut, code := dshBash(t, dir, "mcp", "--config", config); code != 0 {
		t.Fatalf("dsh-bash mcp with stdin at its end: exit %d, %q", code, errOut)
	}
	if fi, err := os.Stat(log); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the configuration's audit log: %v, want a 0600 file", err)
	}
}

// TestAuditLog: dsh-bash mcp --audit-log, with a real client: the calls
// are lines with the documented fields, a command's output is nowhere in
// the log and its secrets are redacted; no jailed command reads the log;
// SIGHUP after logrotate renamed the file reopens it, and does not stop
// the server.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	// Not in $TMPDIR, which the jails' private /tmp hides anyway.
	dir, err := os.MkdirTemp("/var/tmp", "dsh-audit-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "audit.log")
	// What another session's line would say, already in the log.
	os.WriteFile(path, []byte(`{"canary":"audit-canary-7731"}`+"\n"), 0o600)
	cs, cmd, stderr := mcpWithStderr(t, "--sandbox=on", "--audit-log", path)
	watch := watchDir(t, dir)
	// The output (audit-24690-marker) is not in the command.
	command := `printf 'audit-%s-marker\n' "$((12345*2))"; API_TOKEN=s3cr3t-value true; if grep -q canary ` + path + ` 2>/dev/null; then echo AUDIT-LOG-READABLE; fi`
	first := callText(t, cs, "bash", map[string]any{"command": command, "description": "Print a marker"})
	if first != "audit-24690-marker\n" {
		t.Fatalf("first call: %q (want the marker alone: the log is hidden from the jail)", first)
	}
	watch.until(t, path, "the first call's line", func(lines []map[string]any) bool { return len(calls(lines)) == 1 })
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	waitLine(t, stderr, "dsh-bash mcp: audit log reopened: "+path+"\n")
	if got := callText(t, cs, "bash", map[string]any{"command": "echo second", "description": "Print again"}); got != "second\n" {
		t.Fatalf("a call after SIGHUP: %q", got)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no new file after SIGHUP: %v", err)
	}
	closeMCP(t, cs, cmd) // the log is closed, all written, as dsh-bash exits
	old, cur := readAudit(t, path+".1"), readAudit(t, path)
	all, _ := os.ReadFile(path + ".1")
	now, _ := os.ReadFile(path)
	for _, secret := range []string{"audit-24690-marker", "s3cr3t-value"} {
		if strings.Contains(string(all)+string(now), secret) {
			t.Errorf("the log holds %q:\n%s%s", secret, all, now)
		}
	}
	checkEvents(t, old, "session_start", "jail_start", "call") // the session's jail started on its first call
	checkEvents(t, cur, "call", "session_end")
	if s := old[0]; s["front"] != "mcp-stdio" || s["client"] != "audit-test" || s["client_version"] != "1.2" ||
		!strings.HasPrefix(s["containment"].(string), "sandbox (") {
		t.Errorf("the session_start line: %v", s)
	}
	if e := cur[len(cur)-1]; e["front"] != "mcp-stdio" || e["reason"] != "closed" {
		t.Errorf("the session_end line: %v", e)
	}
	c := calls(old)[0]
	if c["command"] != strings.Replace(command, "s3cr3t-value", "[REDACTED]", 1) || c["description"] != "Print a marker" ||
		c["tool"] != "bash" || c["outcome"] != "ok" || c["exit_code"] != 0.0 || c["stdout_bytes"] != 19.0 {
		t.Errorf("the first call's line: %v", c)
	}
	if c := calls(cur)[0]; c["command"] != "echo second" {
		t.Errorf("the second call's line: %v", c)
	}
}

// auditFields are the documented fields of each line (docs/operations.md).
var auditFields = map[string][]string{
	"session_start": {"client", "client_version", "containment", "event", "front", "roots", "session", "time"},
	"session_end":   {"duration_ms", "event", "front", "reason", "session", "time"},
	"jail_start":    {"duration_ms", "error", "event", "layer", "pooled", "session", "time"},
	"call": {"command", "description", "duration_ms", "error", "event", "exit_code", "limit", "outcome", "permission", "refused",
		"refused_more", "session", "signal", "spilled_bytes", "spills", "stderr_bytes", "stdout_bytes", "task", "time", "tool", "unsandboxed"},
}

// checkEvents checks that lines are the events named, each with its
// documented fields, in one session.
func checkEvents(t *testing.T, lines []map[string]any, events ...string) {
	t.Helper()
	var got []string
	for _, l := range lines {
		ev, _ := l["event"].(string)
		got = append(got, ev)
		if keys := slices.Sorted(maps.Keys(l)); !slices.Equal(keys, auditFields[ev]) {
			t.Errorf("%s line with fields %q, want %q", ev, keys, auditFields[ev])
		}
		if ts, _ := l["time"].(string); !strings.HasSuffix(ts, "Z") || len(ts) != len("2006-01-02T15:04:05.000Z") {
			t.Errorf("time %q: not RFC 3339 in UTC to the millisecond", ts)
		}
		if l["session"] != lines[0]["session"] || l["session"] == "" {
			t.Errorf("session %q in a log of session %q", l["session"], lines[0]["session"])
		}
	}
	if !slices.Equal(got, events) {
		t.Errorf("events %q, want %q", got, events)
	}
}

// calls are the call lines of lines.
func calls(lines []map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["event"] == "call" {
			out = append(out, l)
		}
	}
	return out
}

// readAudit reads an audit log's lines.
func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseAudit(t, path, b)
}

// parseAudit parses the lines of an audit log read from path.
func parseAudit(t *testing.T, path string, b []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for l := range strings.Lines(string(b)) {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q of %s: %v", l, path, err)
		}
		if v["canary"] == nil { // the test's own
			lines = append(lines, v)
		}
	}
	return lines
}

// dirWatch tells when files of a directory change (inotify).
type dirWatch struct{ fd int }

func watchDir(t *testing.T, dir string) *dirWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	return &dirWatch{fd}
}

// until waits, within testwait.Limit, for the lines of the log at path to
// satisfy cond, reading them again at each change in its directory.
func (w *dirWatch) until(t *testing.T, path, what string, cond func([]map[string]any) bool) {
	t.Helper()
	deadline := time.Now().Add(testwait.Limit)
	buf := make([]byte, 4096)
	for {
		if b, err := os.ReadFile(path); err == nil && (len(b) == 0 || strings.HasSuffix(string(b), "\n")) {
			if cond(parseAudit(t, path, b)) {
				return
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("%s not in %s within %v", what, path, testwait.Limit)
		}
		unix.Poll([]unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}, int(left.Milliseconds())+1)
		for {
			if n, _ := unix.Read(w.fd, buf); n <= 0 {
				break
			}
		}
	}
}

// mcpWithStderr starts dsh-bash mcp with args over stdio, and reads its
// stderr. It is the race-built dsh-bash: the audit log's writer, and
// SIGHUP's handler, run beside the server's work.
func mcpWithStderr(t *testing.T, args ...string) (*mcp.ClientSession, *exec.Cmd, *testwait.Lines) {
	t.Helper()
	cmd := raceCommand(append([]string{"mcp"}, args...)...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	cmd.Stderr = pw
	tr := &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Minute}
	cs, err := testwait.Reply("initialize", func(ctx context.Context) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "audit-test", Version: "1.2"}, nil).Connect(ctx, tr, nil)
	})
	pw.Close()
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { closeMCP(t, cs, cmd) })
	return cs, cmd, testwait.NewLines(pr)
}

// waitLine reads a dsh-bash's stderr up to the line want (what it says at
// start, about others' leftovers it cleans, comes before).
func waitLine(t *testing.T, stderr *testwait.Lines, want string) {
	t.Helper()
	var before []string
	for {
		line, err := stderr.Next(t, fmt.Sprintf("line %q on stderr", want))
		if err != nil {
			t.Fatalf("stderr ended (%v) without %q, after %q", err, want, before)
		}
		if line == want {
			return
		}
		before = append(before, line)
	}
}
