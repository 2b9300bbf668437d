//go:build linux

package main

import (
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/testwait"
)

// get is the status and body of GET url, with no token.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: testwait.Limit}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// initializeRaw posts an initialize request with no session, with auth
// ("" for none), and returns the response's status, Retry-After and body.
func initializeRaw(t *testing.T, url, auth string) (int, string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, b := send(t, req, auth)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

// waitLine reads s's stderr up to the line want, failing the test if it
// ends first.
func (s *httpServer) waitLine(t *testing.T, want string) {
	t.Helper()
	for {
		line, err := s.stderr.Next(t, "line "+want)
		if err != nil {
			t.Fatalf("no line %q on stderr: %v", want, err)
		}
		if strings.TrimSuffix(line, "\n") == want {
			return
		}
	}
}

const drainingLine = "dsh-bash mcp: SIGTERM: draining: new sessions are refused, the calls in flight have 10m0s to finish; SIGTERM again or SIGINT ends at once"

// TestMCPHTTPProbes: /healthz and /readyz answer without the token; the
// MCP endpoint still wants it.
func TestMCPHTTPProbes(t *testing.T) {
	t.Parallel()
	s := startHTTP(t, []string{"DSH_BASH_TOKEN=" + goodToken}, "--http", "127.0.0.1:0")
	for path, want := range map[string]string{"healthz": "ok\n", "readyz": "ready\n"} {
		if code, body := get(t, s.where+path); code != 200 || body != want {
			t.Errorf("GET /%s: %d %q", path, code, body)
		}
	}
	if code, _, _ := initializeRaw(t, s.where, ""); code != http.StatusUnauthorized {
		t.Errorf("initialize without the token: %d", code)
	}
	if code, _, _ := initializeRaw(t, s.where+"healthz", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d", code)
	}
	s.stop(t)
}

// TestMCPHTTPDrain: after SIGTERM, a call in flight runs to its result,
// an open session can still call, a new session gets 503 with Retry-After
// (from a raw client and from the SDK's), /readyz says draining; once no
// call is in flight the server exits 0 and no command of it survives.
func TestMCPHTTPDrain(t *testing.T) {
	t.Parallel()
	// Race-built: the signal's way to the drain is checked for races.
	s := startHTTPCmd(t, raceCommand("mcp", "--http", "127.0.0.1:0", "--no-auth", "--drain-timeout", "10m"), nil)
	// a has no GET stream: a client without retries (clientFor's) fails
	// its calls when that stream ends, which at the drain's end can be
	// before it has read the last answer (see docs/operations.md).
	a, err := clientFor(t, s, "", false)
	if err != nil {
		t.Fatal(err)
	}
	b := mustClient(t, s, "")
	bg := syncedPid(t, b)
	release := holdCall(t, a)
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.waitLine(t, drainingLine)
	if code, body := get(t, s.where+"readyz"); code != 503 || body != "draining\n" {
		t.Errorf("readyz while draining: %d %q", code, body)
	}
	if code, body := get(t, s.where+"healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz while draining: %d %q", code, body)
	}
	code, retry, body := initializeRaw(t, s.where, "")
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"dsh-bash: this server is shutting down and takes no new sessions: try again, and another server (or this one, restarted) will take it"}}`
	if code != 503 || retry != "1" || body != want {
		t.Errorf("a new session while draining: %d, Retry-After %q, %s", code, retry, body)
	}
	if _, err := clientFor(t, s, "", false); err == nil {
		t.Error("the SDK's client made a new session while draining")
	}
	if got := callText(t, b, "bash", map[string]any{"command": "echo still served", "description": "Say it"}); got != "still served\n" {
		t.Errorf("an open session's call while draining: %q", got)
	}
	if !alive(bg) || s.cmd.ProcessState != nil {
		t.Fatal("the server ended before the call in flight")
	}
	release() // its answer is "released"
	if err := waitCmd(t, s.cmd, exitWait, "dsh-bash mcp did not exit once drained"); err != nil {
		t.Errorf("exit: %v", err)
	}
	if alive(bg) {
		t.Errorf("background task %d outlived the server", bg)
	}
}

// TestMCPHTTPDrainEnds: a drain ends the calls still in flight when its
// time is up, or at a second SIGTERM, or at SIGINT; the server exits 0 and
// their commands (which ignore SIGTERM) die.
func TestMCPHTTPDrainEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout string
		second  os.Signal // nil: the drain times out
	}{
		{"timeout", "200ms", nil},
		{"second SIGTERM", "10m", syscall.SIGTERM},
		{"SIGINT", "10m", syscall.SIGINT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startHTTP(t, nil, "--http", "127.0.0.1:0", "--no-auth", "--drain-timeout", tc.timeout, "--grace-ms", "200")
			cs := mustClient(t, s, "")
			fg := foregroundPid(t, cs)
			s.cmd.Process.Signal(syscall.SIGTERM)
			if tc.second != nil {
				s.waitLine(t, drainingLine)
				s.cmd.Process.Signal(tc.second)
			}
			if err := waitCmd(t, s.cmd, exitWait, "dsh-bash mcp did not end its drain"); err != nil {
				t.Errorf("exit: %v", err)
			}
			if alive(fg) {
				t.Errorf("the call's command %d outlived the server", fg)
			}
		})
	}
}

// TestDrainTimeoutConfig: the configuration file's http.drainTimeout is
// taken unless --drain-timeout is given; a bad one is refused with its
// line.
func TestDrainTimeoutConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		file  string
		flags []string
		want  time.Duration
		err   string
	}{
		{`{}`, nil, 30 * time.Second, ""},
		{`{"http": {"drainTimeout": "45s"}}`, nil, 45 * time.Second, ""},
		{`{"http": {"drainTimeout": "0"}}`, nil, 0, ""},
		{`{"http": {"drainTimeout": "45s"}}`, []string{"--drain-timeout", "5s"}, 5 * time.Second, ""},
		{"{\"http\":\n{\"drainTimeout\": \"soon\"}}", nil, 0, `line 2: http.drainTimeout must be a duration such as "30s", or "0" to end at once (got "soon")`},
		{`{"http": {"drainTimeout": "-1s"}}`, nil, 0, `(got "-1s")`},
		{`{"http": {"drainTimeot": "1s"}}`, nil, 0, `unknown field "drainTimeot"`},
	} {
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := loadConfig(path, true)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.file, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
		hf := registerHTTPFlags(fs)
		if err := fs.Parse(tc.flags); err != nil {
			t.Fatal(err)
		}
		hf.mergeConfig(fs, &c.HTTP)
		if hf.drainTimeout != tc.want {
			t.Errorf("%s %q: %v, want %v", tc.file, tc.flags, hf.drainTimeout, tc.want)
		}
	}
}
