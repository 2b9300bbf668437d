//go:build linux

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/internal/promtooltest"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestMetricsBinary: dsh-bash mcp --http --metrics serves the metrics on
// a listener of its own without a token, and on the HTTP server's
// /metrics behind its token; after an SDK client's calls they count its
// session and its calls by tool and outcome, and the exposition passes
// promtool check metrics.
func TestMetricsBinary(t *testing.T) {
	t.Parallel()
	token := writeFile(t, goodToken, 0o600)
	s := startHTTP(t, nil, "--http", "127.0.0.1:0", "--token-file", token, "--metrics", "127.0.0.1:0")
	var own string
	for _, l := range s.before {
		if u, ok := strings.CutPrefix(l, "dsh-bash mcp: serving metrics on "); ok {
			own = u
		}
	}
	if !strings.HasPrefix(own, "http://127.0.0.1:") || !strings.HasSuffix(own, "/metrics") {
		t.Fatalf("no metrics listener named on stderr: %q", s.before)
	}
	cs := mustClient(t, s, goodToken)
	callText(t, cs, "bash", map[string]any{"command": "echo hi", "description": "Say hi"})
	callText(t, cs, "bash", map[string]any{"command": "echo hi; exit 3", "description": "Fail"})
	callText(t, cs, "bash", map[string]any{"command": "seq 20000", "description": "Count past the memory kept"})
	callText(t, cs, "bash_output", map[string]any{"task_id": "bash-99"})
	body := scrape(t, own, "", http.StatusOK)
	for _, want := range []string{
		`dsh_bash_sessions_started_total{front="mcp-http"} 1`,
		`dsh_bash_sessions_open{front="mcp-http"} 1`,
		`dsh_bash_calls_total{outcome="ok",tool="bash"} 2`,
		`dsh_bash_calls_total{outcome="exit",tool="bash"} 1`,
		`dsh_bash_calls_total{outcome="error",tool="bash_output"} 1`,
		`dsh_bash_call_duration_seconds_count{tool="bash"} 3`,
		`dsh_bash_spilled_bytes_total 108894`, // seq 20000's, past the memory kept
		`process_resident_memory_bytes `,
		`go_goroutines `,
	} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
	promtooltest.Check(t, strings.NewReader(body))
	scrape(t, s.where+"metrics", "", http.StatusUnauthorized)
	if b := scrape(t, s.where+"metrics", "Bearer "+goodToken, http.StatusOK); !strings.Contains(b, `dsh_bash_calls_total{outcome="exit",tool="bash"} 1`) {
		t.Errorf("the HTTP server's /metrics: %q", b)
	}
	s.stop(t)
}

// scrape GETs url with the Authorization header auth ("" for none) and
// returns the body, failing the test on another status than want.
func scrape(t *testing.T, url, auth string, want int) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	resp, body := send(t, req, auth)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %s, want %d", url, resp.Status, want)
	}
	return body
}

// send sends req with the Authorization header auth ("" for none),
// within testwait.Limit, and returns the response and its body, read
// whole; the test fails if no response comes.
func send(t *testing.T, req *http.Request, auth string) (*http.Response, string) {
	t.Helper()
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Timeout: testwait.Limit}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestMetricsUsage: the metrics listener has no token, so it takes a
// loopback address or a unix socket only, from the flag or the
// configuration file.
func TestMetricsUsage(t *testing.T) {
	t.Parallel()
	config := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(config, []byte(`{"metrics": {"addr": "192.0.2.1:9464"}}`), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--metrics", "0.0.0.0:9464"}, "dsh-bash mcp: --metrics 0.0.0.0:9464: refusing a host that is not loopback: this listener has no token, and what it tells is for this machine's operators; scrape the --http server's /metrics (behind its token) from elsewhere\n"},
		{[]string{"mcp", "--metrics", "9464"}, "dsh-bash mcp: --metrics \"9464\" is not HOST:PORT or unix:PATH\n"},
		{[]string{"mcp", "--config", config}, "dsh-bash mcp: config " + config + ": metrics.addr 192.0.2.1:9464: refusing a host that is not loopback: this listener has no token, and what it tells is for this machine's operators; scrape the --http server's /metrics (behind its token) from elsewhere\n"},
	} {
		out, errOut, code := dshBash(t, t.TempDir(), tc.args...)
		if code != 2 || out != "" || errOut != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, stderr %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestMetricsConfig: the configuration file's "metrics": {"addr"} is
// --metrics's, and the flag wins over it.
func TestMetricsConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(path, []byte(`{"metrics": {"addr": "unix:/run/user/1000/dsh-metrics.sock"}}`), 0o600)
	c, err := loadConfig(path, true)
	if err != nil {
		t.Fatal(err)
	}
	for flagAddr, want := range map[string]string{"": "unix:/run/user/1000/dsh-metrics.sock", "127.0.0.1:9464": "127.0.0.1:9464"} {
		of := &observeFlags{metricsAddr: flagAddr}
		if err := of.merge(&c.Metrics); err != nil || of.metricsAddr != want {
			t.Errorf("flag %q and the file: %q, %v; want %q", flagAddr, of.metricsAddr, err, want)
		}
	}
	if of := (&observeFlags{metricsAddr: "unix:rel.sock"}); len(of.serverPaths()) != 1 || !filepath.IsAbs(of.serverPaths()[0]) {
		t.Errorf("a unix socket's path is not hidden from the jails: %q", of.serverPaths())
	}
}

// scrapeUnix GETs /metrics on the unix socket sock and returns the body.
func scrapeUnix(t *testing.T, sock string) string {
	t.Helper()
	c := &http.Client{Timeout: testwait.Limit, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	resp, err := c.Get("http://localhost/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics on %s: %s", sock, resp.Status)
	}
	return string(b)
}

// TestJailCannotReachMetrics: the metrics' unix socket, which has no
// token, is hidden from jails that share the host's network (where a
// host's socket outside the hidden paths is reachable), even inside the
// workspace; the host reaches it.
func TestJailCannotReachMetrics(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	requireCurl(t)
	ws := t.TempDir()
	sock := filepath.Join(ws, "metrics.sock")
	cs, _ := mcpClient(t, "--sandbox=on", "--sandbox-network=on", "--cwd", ws, "--metrics", "unix:"+sock)
	got := callText(t, cs, "bash", map[string]any{"description": "Read the metrics",
		"command": "curl -s -m 5 -o /dev/null -w 'status %{http_code}\\n' --unix-socket " + sock + " http://localhost/metrics; echo curl exit $?"})
	if strings.Contains(got, "status 200") || strings.Contains(got, "curl exit 0") {
		t.Errorf("a jailed command reached the metrics' socket: %q", got)
	}
	if body := scrapeUnix(t, sock); !strings.Contains(body, `dsh_bash_calls_total{outcome="ok",tool="bash"} 1`) {
		t.Errorf("the host's scrape: %q", body)
	}
}

// TestMetricsWarmPool: with --sandbox-warm the metrics show the warm
// pool's target and state, and the session's jail start (a claim, or a
// start where no warm jail was ready yet).
func TestMetricsWarmPool(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("a pool of jails needs root")
	}
	s := startHTTP(t, nil, "--http", "127.0.0.1:0", "--no-auth", "--sandbox=jail", "--sandbox-network=off", "--sandbox-warm", "1")
	cs := mustClient(t, s, "")
	callText(t, cs, "bash", map[string]any{"command": "echo hi", "description": "Say hi"})
	body := scrape(t, s.where+"metrics", "", http.StatusOK)
	for _, want := range []string{"dsh_bash_pool_target_jails 1", "dsh_bash_pool_ready_jails "} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
	if !strings.Contains(body, `dsh_bash_jail_starts_total{kind="pooled",layer="jail",result="ok"} 1`) &&
		!strings.Contains(body, `dsh_bash_jail_starts_total{kind="fresh",layer="jail",result="ok"} 2`) { // New's check, then the session's
		t.Errorf("the session's jail start is not counted:\n%s", grepLines(body, "dsh_bash_jail_starts_total"))
	}
	s.stop(t)
}

// grepLines are the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
