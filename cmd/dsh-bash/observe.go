package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/dshgo/dsh/mcpserver"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/observe/metrics"
)

// What dsh-bash mcp tells its operators (package observe): the events of
// its sessions, calls and sandbox go to one sink, the tee of those the
// flags and the configuration file ask for. So far the Prometheus
// metrics: on a listener of their own (--metrics ADDR, or the
// configuration's "metrics": {"addr": ADDR}), without a token, on
// loopback or a unix socket only; and with --http on its /metrics too,
// behind its token.

// observeFlags are dsh-bash mcp's flags (and configuration) of what it
// tells its operators.
type observeFlags struct {
	metricsAddr string // --metrics, else the configuration's metrics.addr
	http        bool   // serving --http, whose /metrics serves the metrics too

	metrics *metrics.Metrics // made by sink, when they are served
}

// metricsConfig is the configuration file's "metrics" object.
type metricsConfig struct {
	Addr string `json:"addr"` // as --metrics
}

func registerObserveFlags(fs *flag.FlagSet) *observeFlags {
	of := &observeFlags{}
	fs.StringVar(&of.metricsAddr, "metrics", "", "serve Prometheus metrics at /metrics on `ADDR`, without a token: HOST:PORT on loopback, or unix:PATH (a 0600 socket); --http serves them too, behind its token")
	return of
}

// check validates --metrics, reporting a problem on stderr.
func (of *observeFlags) check(stderr io.Writer) bool {
	if err := checkMetricsAddr(of.metricsAddr); err != nil {
		fmt.Fprintf(stderr, "dsh-bash mcp: --metrics %v\n", err)
		return false
	}
	return true
}

// merge takes the configuration file's metrics address, unless --metrics
// gave one.
func (of *observeFlags) merge(c *metricsConfig) error {
	if of.metricsAddr != "" || c.Addr == "" {
		return nil
	}
	if err := checkMetricsAddr(c.Addr); err != nil {
		return fmt.Errorf("metrics.addr %w", err)
	}
	of.metricsAddr = c.Addr
	return nil
}

// checkMetricsAddr accepts "" (none), unix:PATH, and HOST:PORT on a
// loopback host (an empty host is 127.0.0.1): the listener has no token.
func checkMetricsAddr(addr string) error {
	if addr == "" || strings.HasPrefix(addr, "unix:") {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT or unix:PATH", addr)
	}
	loopback := host == "" || strings.EqualFold(host, "localhost")
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	if !loopback {
		return fmt.Errorf("%s: refusing a host that is not loopback: this listener has no token, and what it tells is for this machine's operators; scrape the --http server's /metrics (behind its token) from elsewhere", addr)
	}
	return nil
}

// serverPaths are the paths of the metrics' own endpoint, which the
// jails must not reach: a unix socket's.
func (of *observeFlags) serverPaths() []string {
	if path, ok := strings.CutPrefix(of.metricsAddr, "unix:"); ok {
		if abs, err := filepath.Abs(path); err == nil {
			return []string{abs}
		}
	}
	return nil
}

// sink makes what the flags ask for and returns the sink the server and
// what setup builds tell their events to; nil when nothing listens. pool,
// with a warm pool, reports its state (metrics.Options.PoolSize).
func (of *observeFlags) sink(pool func() (ready, target int)) observe.Sink {
	if of.metricsAddr == "" && !of.http {
		return nil
	}
	of.metrics = metrics.New(&metrics.Options{PoolSize: pool})
	return observe.Tee(of.metrics.Sink())
}

// handler serves the metrics (nil when they are not made).
func (of *observeFlags) handler() http.Handler {
	if of.metrics == nil {
		return nil
	}
	return of.metrics.Handler()
}

// serveMetrics serves the metrics on --metrics's address until ctx is
// done; wait returns once the listener is closed.
func (of *observeFlags) serveMetrics(ctx context.Context, stderr io.Writer) (wait func(), err error) {
	if of.metricsAddr == "" {
		return func() {}, nil
	}
	ln, err := mcpserver.Listen(metricsHostPort(of.metricsAddr), true)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", of.handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(warnLogger(stderr).Handler(), slog.LevelWarn)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "dsh-bash mcp: metrics: %v\n", err)
		}
	}()
	stop := context.AfterFunc(ctx, func() { hs.Close() })
	at := where(ln, of.metricsAddr)
	if strings.HasPrefix(at, "http://") {
		at += "metrics"
	} else {
		at += ", at /metrics"
	}
	fmt.Fprintf(stderr, "dsh-bash mcp: serving metrics on %s\n", at)
	return func() {
		stop()
		hs.Close()
		<-served
	}, nil
}

// metricsHostPort gives a TCP address without a host the loopback one.
func metricsHostPort(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}
