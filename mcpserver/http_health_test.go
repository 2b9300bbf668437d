//go:build linux

package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dshgo/dsh/internal/testwait"
)

// probe sends a request without a token and returns its status, body and
// header.
func probe(t *testing.T, method, url string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body), resp.Header
}

// TestHTTPProbes: /healthz and /readyz answer GET and HEAD without the
// token, with fixed bodies; /readyz follows Ready; every other path, and
// the probes' paths spelled otherwise, still needs the token.
func TestHTTPProbes(t *testing.T) {
	var fail atomic.Pointer[error]
	ready := func(context.Context) error {
		if err := fail.Load(); err != nil {
			return *err
		}
		return nil
	}
	var logged strings.Builder
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))
	r := newRig(t, &Options{Logger: logger})
	hr := serveHandler(t, r, r.srv.HTTPHandler(&HTTPOptions{Token: testToken, Ready: ready, ReadyReuse: -1}))
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/healthz", 200, "ok\n"},
		{"HEAD", "/healthz", 200, ""},
		{"GET", "/readyz", 200, "ready\n"},
		{"HEAD", "/readyz", 200, ""},
		{"GET", "/healthz?verbose", 200, "ok\n"},
		{"POST", "/healthz", 405, "method not allowed\n"},
		{"DELETE", "/readyz", 405, "method not allowed\n"},
	} {
		code, body, hdr := probe(t, tc.method, hr.url+tc.path)
		if code != tc.code || body != tc.body || hdr.Get("Content-Type") != "text/plain; charset=utf-8" || hdr.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: %d %q %v; want %d %q", tc.method, tc.path, code, body, hdr, tc.code, tc.body)
		}
		if tc.code == 405 && hdr.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, hdr.Get("Allow"))
		}
	}
	for _, path := range []string{"/", "/mcp", "/healthz/", "/readyz/x", "/Healthz", "/metrics"} {
		if code, _, _ := probe(t, "GET", hr.url+path); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d", path, code)
		}
	}
	if resp := post(t, hr.url+"/healthz", initialize); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("initialize posted to /healthz: %s", resp.Status)
	}
	notYet := errors.New("the pool is 2 jails short")
	fail.Store(&notYet)
	for range 2 {
		if code, body, _ := probe(t, "GET", hr.url+"/readyz"); code != 503 || body != "not ready\n" {
			t.Errorf("Ready failing: %d %q", code, body)
		}
	}
	if code, body, _ := probe(t, "GET", hr.url+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz while not ready: %d %q", code, body)
	}
	fail.Store(nil)
	if code, body, _ := probe(t, "GET", hr.url+"/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("Ready again: %d %q", code, body)
	}
	// The reason goes to the log, once while it stays the same; never to
	// the prober.
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(logged.String(), "not ready: the pool is 2 jails short"); n != 1 {
		t.Errorf("the log says it %d times: %q", n, logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serveHandler serves h on a loopback test server until the test ends.
func serveHandler(t *testing.T, r *rig, h *HTTPHandler) *httpRig {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		hs.Close()
	})
	return &httpRig{rig: r, h: h, url: hs.URL}
}

// probeAnswer is GET url's status text and body, or the error, for a
// goroutine other than the test's.
func probeAnswer(url string) string {
	resp, err := httpClient.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return http.StatusText(resp.StatusCode) + " " + string(body)
}

// blockingReady is a Ready that counts its calls, says when one starts,
// and answers nil once release is closed.
type blockingReady struct {
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func newBlockingReady() *blockingReady {
	return &blockingReady{entered: make(chan struct{}, 10), release: make(chan struct{})}
}

func (b *blockingReady) ready(ctx context.Context) error {
	b.calls.Add(1)
	b.entered <- struct{}{}
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestHTTPReadyOnce: Ready runs once at a time whoever probes, and the
// probes that come meanwhile share its answer; so do those within
// ReadyReuse after it. Close ends a call in progress.
func TestHTTPReadyOnce(t *testing.T) {
	b := newBlockingReady()
	r := newRig(t, nil)
	h := r.srv.HTTPHandler(&HTTPOptions{Token: testToken, Ready: b.ready, ReadyReuse: -1})
	hr := serveHandler(t, r, h)
	answers := make(chan string, 3)
	for range 3 {
		go func() { answers <- probeAnswer(hr.url + ReadyPath) }()
	}
	testwait.Recv(t, b.entered, "the call of Ready")
	if !testwait.Until(func() bool { return h.ready.waiters() == 3 }) {
		t.Fatalf("%d probes wait for the call of Ready, want 3", h.ready.waiters())
	}
	close(b.release)
	for range 3 {
		if got := testwait.Recv(t, answers, "a probe's answer"); got != "OK ready\n" {
			t.Errorf("probe: %q", got)
		}
	}
	if n := b.calls.Load(); n != 1 {
		t.Errorf("three probes at once called Ready %d times", n)
	}
	if got := probeAnswer(hr.url + ReadyPath); got != "OK ready\n" || b.calls.Load() != 2 {
		t.Errorf("a later probe, no reuse: %q, %d calls", got, b.calls.Load())
	}

	h2 := r.srv.HTTPHandler(&HTTPOptions{Token: testToken, Ready: b.ready, ReadyReuse: 1 << 62})
	hr2 := serveHandler(t, r, h2)
	for range 2 {
		if got := probeAnswer(hr2.url + ReadyPath); got != "OK ready\n" {
			t.Errorf("with reuse: %q", got)
		}
	}
	if n := b.calls.Load(); n != 3 {
		t.Errorf("two probes within ReadyReuse: %d calls in all, want 3", n)
	}

	// Close ends a call in progress, and no probe makes one after it.
	b3 := newBlockingReady()
	h3 := r.srv.HTTPHandler(&HTTPOptions{Token: testToken, Ready: b3.ready})
	checked := make(chan error, 1)
	go func() { checked <- h3.ready.check(context.Background()) }()
	testwait.Recv(t, b3.entered, "the call of Ready")
	h3.Close()
	if err := testwait.Recv(t, checked, "the probe's answer"); !errors.Is(err, context.Canceled) {
		t.Errorf("the probe whose call Close ended: %v", err)
	}
	if err := h3.ready.check(context.Background()); !errors.Is(err, errClosed) || b3.calls.Load() != 1 {
		t.Errorf("a probe after Close: %v, %d calls", err, b3.calls.Load())
	}
}
