package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/observe"
)

// at is the time of the events of these tests: in UTC+2, written in UTC.
var at = time.Date(2026, 12, 5, 14, 3, 4, 567891000, time.FixedZone("", 2*3600))

// lineCases are an event of each type and its line, byte for byte.
var lineCases = []struct {
	ev   observe.Event
	want string
}{
	{&observe.SessionStart{Time: at, Session: "s-1a2b", Front: "mcp-http", Client: "claude-code", ClientVersion: "2.1.0",
		Roots: []string{"/work/app"}, Containment: "sandbox (jail)"},
		`{"time":"2026-12-05T12:03:04.567Z","event":"session_start","session":"s-1a2b","front":"mcp-http","client":"claude-code","client_version":"2.1.0","roots":["/work/app"],"containment":"sandbox (jail)"}`},
	{&observe.SessionStart{Time: at, Session: "s-2", Front: "acp"},
		`{"time":"2026-12-05T12:03:04.567Z","event":"session_start","session":"s-2","front":"acp","client":"","client_version":"","roots":[],"containment":""}`},
	{&observe.SessionEnd{Time: at, Session: "s-1a2b", Front: "mcp-http", Reason: "idle", Duration: 90*time.Minute + 1500*time.Microsecond},
		`{"time":"2026-12-05T12:03:04.567Z","event":"session_end","session":"s-1a2b","front":"mcp-http","reason":"idle","duration_ms":5400001.5}`},
	{&observe.Call{Time: at, Session: "s-1a2b", Tool: "bash", Command: "curl -H 'Authorization: Bearer abc123' https://x > out && make <in",
		Description: "Fetch with https://u:pw@h", Permission: &observe.Permission{Verdict: "ask", Rule: "curl *", Source: "/etc/dsh/config.json", Answer: "allowed once"},
		Unsandboxed: &observe.Question{Asked: true, Answer: "allowed"}, Outcome: "exit", ExitCode: 2, Duration: 4512 * time.Microsecond,
		StdoutBytes: 70000, StderrBytes: 12, Spills: []string{"/tmp/dsh-spill-1/s/a"}, SpilledBytes: 70000, Limit: "memory limit 2 GiB",
		Refused: []observe.Refusal{{Program: "/usr/bin/git", Argv: []string{"git", "push", "https://u:tok@h/r"}, Rule: "git push"}}, RefusedMore: 3},
		`{"time":"2026-12-05T12:03:04.567Z","event":"call","session":"s-1a2b","tool":"bash","command":"curl -H 'Authorization: Bearer [REDACTED]' https://x > out && make <in","description":"Fetch with https://u:[REDACTED]@h","task":"","permission":{"verdict":"ask","rule":"curl *","source":"/etc/dsh/config.json","reason":"","answer":"allowed once"},"unsandboxed":{"asked":true,"answer":"allowed"},"outcome":"exit","exit_code":2,"signal":"","duration_ms":4.512,"stdout_bytes":70000,"stderr_bytes":12,"spills":["/tmp/dsh-spill-1/s/a"],"spilled_bytes":70000,"limit":"memory limit 2 GiB","refused":[{"program":"/usr/bin/git","argv":["git","push","https://u:[REDACTED]@h/r"],"rule":"git push"}],"refused_more":3,"error":""}`},
	{&observe.Call{Time: at, Session: "s-1a2b", Tool: "bash_output", Task: "bash-3", Outcome: "invalid", Error: `invalid task_id: expected a string`},
		`{"time":"2026-12-05T12:03:04.567Z","event":"call","session":"s-1a2b","tool":"bash_output","command":"","description":"","task":"bash-3","permission":null,"unsandboxed":null,"outcome":"invalid","exit_code":0,"signal":"","duration_ms":0,"stdout_bytes":0,"stderr_bytes":0,"spills":[],"spilled_bytes":0,"limit":"","refused":[],"refused_more":0,"error":"invalid task_id: expected a string"}`},
	{&observe.Call{Time: at, Session: "s-1a2b", Tool: "bash", Command: "sleep 9", Outcome: "signal", ExitCode: -1, Signal: "SIGTERM",
		Permission: &observe.Permission{Verdict: "allow", Reason: "read-only"}},
		`{"time":"2026-12-05T12:03:04.567Z","event":"call","session":"s-1a2b","tool":"bash","command":"sleep 9","description":"","task":"","permission":{"verdict":"allow","rule":"","source":"","reason":"read-only","answer":""},"unsandboxed":null,"outcome":"signal","exit_code":-1,"signal":"SIGTERM","duration_ms":0,"stdout_bytes":0,"stderr_bytes":0,"spills":[],"spilled_bytes":0,"limit":"","refused":[],"refused_more":0,"error":""}`},
	{&observe.Network{Time: at, Session: "s-1a2b", Host: "evil.example", Port: 443, Verdict: "deny", Asked: true, Reason: "the user refused"},
		`{"time":"2026-12-05T12:03:04.567Z","event":"network","session":"s-1a2b","host":"evil.example","port":443,"verdict":"deny","asked":true,"rule":"","reason":"the user refused"}`},
	{&observe.JailStart{Time: at, Layer: "jail", Duration: 31 * time.Millisecond},
		`{"time":"2026-12-05T12:03:04.567Z","event":"jail_start","session":"","layer":"jail","pooled":false,"duration_ms":31,"error":""}`},
	{&observe.JailStart{Time: at, Session: "s-1a2b", Layer: "landlock layer", Pooled: true, Err: "bwrap: exit status 1"},
		`{"time":"2026-12-05T12:03:04.567Z","event":"jail_start","session":"s-1a2b","layer":"landlock layer","pooled":true,"duration_ms":0,"error":"bwrap: exit status 1"}`},
	{&observe.TaskEnd{Time: at, Session: "s-1a2b", Task: "bash-4", Outcome: "limit", ExitCode: -1, Signal: "SIGKILL", Limit: "memory limit 2 GiB",
		Refused: []observe.Refusal{{Program: "/usr/bin/mysql", Argv: []string{"mysql", "-psecret"}, Rule: "mysql"}}, Duration: 2 * time.Second},
		`{"time":"2026-12-05T12:03:04.567Z","event":"task_end","session":"s-1a2b","task":"bash-4","outcome":"limit","exit_code":-1,"signal":"SIGKILL","limit":"memory limit 2 GiB","refused":[{"program":"/usr/bin/mysql","argv":["mysql","-p[REDACTED]"],"rule":"mysql"}],"refused_more":0,"duration_ms":2000}`},
}

// TestLines: each event's line, every field in its documented place.
func TestLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l := open(t, path, nil)
	for _, tc := range lineCases {
		l.Sink()(tc.ev)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, path)
	if len(got) != len(lineCases) {
		t.Fatalf("%d lines for %d events:\n%s", len(got), len(lineCases), strings.Join(got, "\n"))
	}
	for i, tc := range lineCases {
		if got[i] != tc.want {
			t.Errorf("%T line\n got %s\nwant %s", tc.ev, got[i], tc.want)
		}
		if !json.Valid([]byte(got[i])) {
			t.Errorf("line %d is not JSON", i)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log file: %v, mode %v; want 0600", err, fi.Mode())
	}
}

// TestLineWithoutTime: an event with no time gets the time it is written.
func TestLineWithoutTime(t *testing.T) {
	before := time.Now().UTC().Truncate(time.Millisecond)
	v := line(&observe.SessionEnd{Session: "s"}).(*sessionEndLine)
	got, err := time.Parse(time.RFC3339, v.Time)
	if err != nil || got.Before(before) || !strings.HasSuffix(v.Time, "Z") {
		t.Errorf("time %q (%v), want now in UTC", v.Time, err)
	}
}

// TestNilEvent: a nil event is dropped, not a panic on the caller's path.
func TestNilEvent(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "audit.log"), nil)
	l.Sink()((*observe.Call)(nil))
	l.Sink()(nil)
	if err := l.Close(); err != nil || l.Dropped() != 0 {
		t.Errorf("Close: %v, Dropped() %d", err, l.Dropped())
	}
}

// TestSnapshot: the log keeps the event as it was given, whatever its
// producer does with its own after.
func TestSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l := open(t, path, nil)
	c := &observe.Call{Time: at, Tool: "bash", Command: "a", Spills: []string{"/x"}, Permission: &observe.Permission{Verdict: "allow"}}
	l.Sink()(c)
	c.Command, c.Spills[0], c.Permission.Verdict = "b", "/y", "deny"
	l.Close()
	got := readLines(t, path)
	if len(got) != 1 || !strings.Contains(got[0], `"command":"a"`) || !strings.Contains(got[0], `"spills":["/x"]`) || !strings.Contains(got[0], `"verdict":"allow"`) {
		t.Errorf("line %q: not the event as given", got)
	}
}

// open opens a log that reports through t.
func open(t *testing.T, path string, opts *Options) *Log {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Errorf == nil {
		opts.Errorf = t.Errorf // these tests expect no report
	}
	l, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// readLines are the lines of a file.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
