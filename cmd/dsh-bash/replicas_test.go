//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// haproxyConfig is the configuration docs/operations.md shows, which the
// replica test runs.
const haproxyConfig = "testdata/haproxy.cfg"

// haproxyBinary is HAProxy for the replica test: $DSH_HAPROXY (which
// .ci/run unpacks from Debian's package), else haproxy on PATH or in
// /usr/sbin. Without it the test skips, but under CI=true it fails.
func haproxyBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("DSH_HAPROXY"), "haproxy", "/usr/sbin/haproxy"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no HAProxy ($DSH_HAPROXY, haproxy on PATH, /usr/sbin/haproxy): .ci/run unpacks Debian's")
	}
	t.Skip("no HAProxy: set DSH_HAPROXY, or install Debian's haproxy")
	return ""
}

// balancer is a running HAProxy.
type balancer struct {
	cmd    *exec.Cmd
	url    string
	stderr *testwait.Lines
	socket string // its runtime API
}

// startHAProxy runs HAProxy with haproxyConfig in front of the replicas,
// on a loopback listener the test opens and hands to it (bind fd@3), so
// that it is listening before HAProxy has even started. A second
// configuration file of the test's adds the runtime API, on a unix socket.
func startHAProxy(t *testing.T, bin string, replicas []*httpServer) *balancer {
	t.Helper()
	dir := t.TempDir()
	socket := filepath.Join(dir, "admin.sock")
	admin := filepath.Join(dir, "admin.cfg")
	if err := os.WriteFile(admin, []byte("global\n    stats socket "+socket+" level admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd := exec.Command(bin, "-db", "-f", haproxyConfig, "-f", admin)
	cmd.ExtraFiles = []*os.File{lf}
	cmd.Env = append(os.Environ(), "DSH_LB_BIND=fd@3")
	for i, r := range replicas {
		cmd.Env = append(cmd.Env, fmt.Sprintf("DSH_REPLICA_%d=%s", i+1, strings.TrimSuffix(strings.TrimPrefix(r.where, "http://"), "/")))
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatal(err)
	}
	b := &balancer{cmd: cmd, url: "http://" + ln.Addr().String() + "/", stderr: testwait.NewLines(pr), socket: socket}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := waitCmd(t, cmd, exitWait, "haproxy ignored SIGTERM"); err != nil && !isSignal(err, syscall.SIGTERM) {
			t.Errorf("haproxy: %v", err)
		}
	})
	return b
}

func isSignal(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ((ws.Signaled() && ws.Signal() == sig) || ws.ExitStatus() == 128+int(sig) || ws.ExitStatus() == 0)
}

// api sends one command to the balancer's runtime API and returns the
// answer. The socket appears once HAProxy has read its configuration.
func (b *balancer) api(t *testing.T, command string) string {
	t.Helper()
	var c net.Conn
	if !testwait.Until(func() bool {
		var err error
		c, err = net.Dial("unix", b.socket)
		return err == nil
	}) {
		t.Fatalf("haproxy's runtime API never answered; it said: %s", b.stderr.Last())
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testwait.Limit))
	if _, err := io.WriteString(c, command+"\n"); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("haproxy's answer to %q: %v", command, err)
	}
	return string(answer)
}

// stat is a counter of show stat, for a server of the backend (or
// BACKEND).
func (b *balancer) stat(t *testing.T, server, field string) int {
	t.Helper()
	lines := strings.Split(strings.TrimPrefix(b.api(t, "show stat"), "# "), "\n")
	names := strings.Split(lines[0], ",")
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != len(names) || f[0] != "dsh_bash" || f[1] != server {
			continue
		}
		for i, n := range names {
			if n == field {
				v, _ := strconv.Atoi(f[i])
				return v
			}
		}
	}
	t.Fatalf("no %s of dsh_bash/%s in haproxy's stats", field, server)
	return 0
}

// waitFor reads the balancer's output up to a line containing want.
func (b *balancer) waitFor(t *testing.T, want string) {
	t.Helper()
	for {
		line, err := b.stderr.Next(t, "haproxy saying "+want)
		if err != nil {
			t.Fatalf("haproxy never said %q: %v; last lines: %s", want, err, b.stderr.Last())
		}
		if strings.Contains(line, want) {
			return
		}
	}
}

// lbSession is a client session through the balancer, and the replica
// its first call ran on.
type lbSession struct {
	cs      *mcp.ClientSession
	replica string
}

// replicaOf asks the replica cs's call lands on for its name.
func replicaOf(cs *mcp.ClientSession) (string, error) {
	res, err := testwait.Reply("tools/call bash", func(ctx context.Context) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo $DSH_REPLICA", "description": "Name the replica"}})
	})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", fmt.Errorf("call answered %v", res.Content)
	}
	return strings.TrimSuffix(res.Content[0].(*mcp.TextContent).Text, "\n"), nil
}

// each runs f(i) for i < n at once and joins their errors.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// openSessions connects n clients through the balancer at once and
// learns each one's replica.
func openSessions(t *testing.T, url string, tr http.RoundTripper, n int) []*lbSession {
	t.Helper()
	ss := make([]*lbSession, n)
	err := each(n, func(i int) error {
		// The SDK's default retries: when the drained replica ends its
		// sessions, their clients read the answers already sent before
		// they find the session gone (with none, the end of the GET
		// stream fails the calls whose answers are still on their way).
		cs, err := connect(&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		ss[i] = &lbSession{cs: cs}
		ss[i].replica, err = replicaOf(cs)
		return err
	})
	for _, s := range ss {
		if s != nil {
			t.Cleanup(func() { s.cs.Close() })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// callsStay makes calls more calls in each session at once, and fails
// the test if one fails or lands on a replica other than its session's.
func callsStay(t *testing.T, what string, ss []*lbSession, calls int) {
	t.Helper()
	err := each(len(ss), func(i int) error {
		for range calls {
			got, err := replicaOf(ss[i].cs)
			if err != nil {
				return fmt.Errorf("%s: a call of a session on %s: %w", what, ss[i].replica, err)
			}
			if got != ss[i].replica {
				return fmt.Errorf("%s: a call of a session on %s ran on %s", what, ss[i].replica, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestReplicas: three replicas behind HAProxy with haproxyConfig, 30
// sessions: each session's calls all run on one replica. One replica is
// drained (SIGTERM) mid-run: no call of the sessions on the others fails,
// its own sessions still reach it and their calls in flight finish, new
// sessions go to the others, and it exits once its calls are done, its
// commands with it.
func TestReplicas(t *testing.T) {
	t.Parallel()
	hap := haproxyBinary(t)
	reps := make([]*httpServer, 3)
	for i := range reps {
		reps[i] = startHTTP(t, []string{"DSH_REPLICA=replica" + strconv.Itoa(i+1)},
			"--http", "127.0.0.1:0", "--no-auth", "--sandbox=off", "--drain-timeout", "10m", "--cwd", t.TempDir())
	}
	lb := startHAProxy(t, hap, reps)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	all := openSessions(t, lb.url, tr, 30)
	const drained = "replica2"
	var on2, others []*lbSession
	for _, s := range all {
		if s.replica == drained {
			on2 = append(on2, s)
		} else {
			others = append(others, s)
		}
	}
	if len(on2) == 0 || len(others) == 0 {
		t.Fatalf("%d sessions on %s, %d on the others: round robin should spread them", len(on2), drained, len(others))
	}
	callsStay(t, "before the drain", all, 1)

	// Calls in flight on the replica to drain, and a background task.
	var releases []func()
	for _, s := range on2 {
		releases = append(releases, holdCall(t, s.cs))
	}
	bg := syncedPid(t, on2[0].cs)
	// HAProxy keeps it in the rotation until the test lets it check
	// again: new sessions reach it while it drains.
	lb.api(t, "disable health dsh_bash/"+drained)
	// The other sessions call while the SIGTERM comes.
	mid := make(chan struct{})
	go func() {
		defer close(mid)
		callsStay(t, "as the drain starts", others, 1)
	}()
	reps[1].cmd.Process.Signal(syscall.SIGTERM)
	reps[1].waitLine(t, drainingLine)
	testwait.Recv(t, mid, "the calls made as the drain starts")
	// New sessions sent to it are refused (503), and HAProxy sends them to
	// another replica (retry-on 503, option redispatch).
	fresh := openSessions(t, lb.url, tr, 6)
	if n := lb.stat(t, drained, "wredis"); n == 0 {
		t.Errorf("no new session was sent to the draining %s", drained)
	}
	// Once HAProxy takes it out, its sessions still reach it (option
	// persist), new sessions go elsewhere, the others are served.
	lb.api(t, "enable health dsh_bash/"+drained)
	lb.waitFor(t, "Server dsh_bash/"+drained+" is DOWN")
	callsStay(t, "during the drain", on2, 1)
	callsStay(t, "during the drain", others, 1)
	fresh = append(fresh, openSessions(t, lb.url, tr, 3)...)
	for _, s := range fresh {
		if s.replica == drained {
			t.Errorf("a new session went to the draining %s", drained)
		}
	}
	for _, release := range releases {
		release() // the call in flight answers "released"
	}
	if err := waitCmd(t, reps[1].cmd, exitWait, drained+" did not exit once drained"); err != nil {
		t.Errorf("%s: %v", drained, err)
	}
	if alive(bg) {
		t.Errorf("a background task of %s outlived it", drained)
	}
	callsStay(t, "after the drain", append(others, fresh...), 1)
	for _, i := range []int{0, 2} {
		reps[i].stop(t)
	}
}

// TestHAProxyConfigDocumented: docs/operations.md shows the HAProxy
// configuration TestReplicas runs, whole.
func TestHAProxyConfigDocumented(t *testing.T) {
	t.Parallel()
	cfg, err := os.ReadFile(haproxyConfig)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```haproxy\n"+string(cfg)+"```\n") {
		t.Errorf("docs/operations.md does not show %s as it is", haproxyConfig)
	}
}
