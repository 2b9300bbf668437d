// Package k8stest gives tests a real Kubernetes cluster to run pods in:
// its client configuration, a namespace of their own, a test image and a
// pod template. The cluster is the single-node one shared/k8s/up.sh
// brings up on this machine (see docs/testing.md); $KUBECONFIG names it,
// or, with DSH_K8S_UP=1, the tests run up.sh themselves.
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
	"os/exec"
	"path/filepath"
	"strings"
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

// upEnv names the environment variable that lets the tests bring the
// cluster up themselves where $KUBECONFIG is unset: with it set to 1,
// the first test of a process that needs the cluster runs
// shared/k8s/up.sh and uses the kubeconfig it prints. up.sh takes a lock
// and reuses a healthy cluster, so a test started while another caller
// (.ci/run, in the background) brings it up waits for that one, and one
// started after gets it at once.
const upEnv = "DSH_K8S_UP"

// upTimeout bounds up.sh: it builds the cluster's binaries the first
// time on a machine, about 5 minutes.
const upTimeout = 8 * time.Minute

// testCluster is the cluster the tests use: its kubeconfig file and the
// client configuration loaded from it.
type testCluster struct {
	kubeconfig string
	config     *rest.Config
}

// cluster loads $KUBECONFIG (or the kubeconfig up.sh prints, under
// DSH_K8S_UP=1) and checks, once per process, that its API server
// answers and is ready.
var cluster = sync.OnceValues(func() (*testCluster, error) {
	env, err := kubeconfigFile()
	if err != nil {
		return nil, err
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
	if err := ready(cfg); err != nil {
		return nil, fmt.Errorf("the API server at %s (KUBECONFIG=%s) is not ready: %v", cfg.Host, env, err)
	}
	return &testCluster{kubeconfig: env, config: cfg}, nil
})

// kubeconfigFile is $KUBECONFIG, or under DSH_K8S_UP=1 the kubeconfig of
// the cluster shared/k8s/up.sh brings up (or finds up).
func kubeconfigFile() (string, error) {
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return env, nil
	}
	if os.Getenv(upEnv) != "1" {
		// Not ~/.kube/config: that may be a cluster of the user's own,
		// which tests must not create pods in.
		return "", fmt.Errorf("$KUBECONFIG is not set (KUBECONFIG=$(bash shared/k8s/up.sh) brings a cluster up, or %s=1 has the tests run it)", upEnv)
	}
	script, err := sharedScript("up.sh")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	var out, progress bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stdout, cmd.Stderr = &out, &progress
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s=1: %s: %v\n%s", upEnv, script, err, lastLines(progress.Bytes(), 20))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	path := strings.TrimSpace(lines[len(lines)-1])
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%s=1: %s printed %q, not a kubeconfig path", upEnv, script, out.String())
	}
	return path, nil
}

// lastLines is the end of b, at most n lines.
func lastLines(b []byte, n int) []byte {
	lines := bytes.SplitAfter(bytes.TrimRight(b, "\n"), []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], nil)
}

// ready checks that the API server answers /readyz within probeTimeout.
func ready(cfg *rest.Config) error {
	probe := rest.CopyConfig(cfg)
	probe.Timeout = probeTimeout
	client, err := corev1client.NewForConfig(probe)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	body, err := client.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil && len(body) > 0 {
		err = fmt.Errorf("%v: %s", err, bytes.TrimSpace(body))
	}
	return err
}

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
	return rest.CopyConfig(get(t).config)
}

// Kubeconfig returns the test cluster's kubeconfig file, for a program
// the test starts (as Config does the configuration).
func Kubeconfig(t testing.TB) string {
	t.Helper()
	return get(t).kubeconfig
}

// get returns the test cluster, or skips or fails the test without one.
func get(t testing.TB) *testCluster {
	t.Helper()
	c, err := cluster()
	if err != nil {
		unavailable(t, "no Kubernetes cluster: %v", err)
	}
	return c
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
