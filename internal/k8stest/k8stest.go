// Package k8stest gives tests a real Kubernetes cluster to run pods in:
// its client configuration, a namespace of their own, a test image and a
// pod template. The cluster is the single-node one shared/k8s/up.sh
// brings up on this machine (see docs/testing.md); $KUBECONFIG names it.
//
// Without a reachable cluster the tests that ask for one skip, saying
// why, except under CI=true, where they fail: CI brings the cluster up
// (.ci/run) and the tests must run there.
//
// The pods the template makes share this machine's /usr (read-only) and
// /tmp, and its network: they run this machine's bash, coreutils and
// python3, and the race-built test binary, at the paths they have here.
// So the cluster must run on this machine; Config refuses one whose API
// server is not on loopback.
package k8stest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// probeTimeout bounds the check that the cluster answers: it is on
// loopback, so a few seconds mean it is not there.
const probeTimeout = 5 * time.Second

// cluster loads $KUBECONFIG and checks, once per process, that its API
// server answers and is ready.
var cluster = sync.OnceValues(func() (*rest.Config, error) {
	env := os.Getenv("KUBECONFIG")
	if env == "" {
		// Not ~/.kube/config: that may be a cluster of the user's own,
		// which tests must not create pods in.
		return nil, fmt.Errorf("$KUBECONFIG is not set (KUBECONFIG=$(bash shared/k8s/up.sh) brings a cluster up)")
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("KUBECONFIG=%s: %v", env, err)
	}
	if err := onLoopback(cfg.Host); err != nil {
		return nil, fmt.Errorf("KUBECONFIG=%s: %v: the test pods mount this machine's /usr and /tmp, so the cluster must run here", env, err)
	}
	// The cluster is local and tests make pods in parallel: client-go's
	// default of 5 requests a second would throttle them.
	cfg.QPS, cfg.Burst = 100, 200
	probe := rest.CopyConfig(cfg)
	probe.Timeout = probeTimeout
	client, err := corev1client.NewForConfig(probe)
	if err != nil {
		return nil, fmt.Errorf("KUBECONFIG=%s: %v", env, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	body, err := client.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		if len(body) > 0 {
			err = fmt.Errorf("%v: %s", err, bytes.TrimSpace(body))
		}
		return nil, fmt.Errorf("the API server at %s (KUBECONFIG=%s) is not ready: %v", cfg.Host, env, err)
	}
	return cfg, nil
})

// onLoopback reports an error unless host, a URL or host:port, names a
// loopback address.
func onLoopback(host string) error {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		u = &url.URL{Host: host}
	}
	name := u.Hostname()
	if name == "localhost" {
		return nil
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("its API server %s is not on loopback", host)
}

// Config returns the client configuration of the test cluster: a copy of
// its own for the caller to change. Without a reachable cluster the test
// skips, saying why; under CI=true it fails instead.
func Config(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := cluster()
	if err != nil {
		unavailable(t, "no Kubernetes cluster: %v", err)
	}
	return rest.CopyConfig(cfg)
}

// Client returns a typed core/v1 client of the test cluster, as Config
// does its configuration.
func Client(t testing.TB) corev1client.CoreV1Interface {
	t.Helper()
	c, err := corev1client.NewForConfig(Config(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// unavailable skips the test for want of what the message says, or fails
// it under CI=true, which brings the cluster up and must run the tests.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true needs it (.ci/run brings the cluster up with shared/k8s/up.sh)", msg)
	}
	t.Skip(msg)
}

// StartLimit bounds, in tests, what waits for a pod to start: on a loaded
// machine (the whole suite running beside) that may take longer than
// testwait.Limit allows a process.
const StartLimit = 60 * time.Second

// IgnoreIdleConnections is the goleak option for the TestMain of a package
// whose tests use the cluster: client-go caches its transports for the
// life of the process, so the read loop of its idle HTTP/2 connection to
// the API server outlives the tests. A watch or an exec stream left open
// still shows, in goroutines of its own.
func IgnoreIdleConnections() goleak.Option {
	return goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop")
}

// IgnoreCutHeartbeats is the goleak option for the heartbeat of an exec
// stream whose connection was cut: client-go stops it only when its next
// ping fails, up to its period (5 s) later. A stream left open still shows,
// in goroutines of its own (its readDemuxLoop).
func IgnoreCutHeartbeats() goleak.Option {
	return goleak.IgnoreAnyFunction("k8s.io/client-go/tools/remotecommand.(*heartbeat).start")
}
