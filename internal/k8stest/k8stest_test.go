//go:build linux

package k8stest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

func TestMain(m *testing.M) {
	proctest.QuickRaceExit()
	goleak.VerifyTestMain(m, IgnoreIdleConnections())
}

// TestPod runs commands in a pod made from Template, over client-go's
// exec stream.
func TestPod(t *testing.T) {
	t.Parallel()
	cfg := Config(t)
	start := time.Now()
	ns := Namespace(t)
	t.Logf("namespace create → its default ServiceAccount: %v", time.Since(start).Round(time.Millisecond))
	pod := Template(t)
	pod.Name = "pod"
	start = time.Now()
	pod = StartPod(t, ns, pod)
	t.Logf("pod create → Running: %v", time.Since(start).Round(time.Millisecond))

	// Alone, before the parallel subtests, to time the exec stream.
	t.Run("echo", func(t *testing.T) {
		var setups []time.Duration
		for range 5 {
			var stdout, stderr bytes.Buffer
			first := &firstWrite{w: &stdout}
			start := time.Now()
			if err := execIn(cfg, pod, []string{"bash", "-c", "echo hi"}, nil, first, &stderr); err != nil {
				t.Fatalf("%v; stderr %q", err, stderr.String())
			}
			if stdout.String() != "hi\n" {
				t.Fatalf("stdout %q, want %q; stderr %q", stdout.String(), "hi\n", stderr.String())
			}
			setups = append(setups, first.at().Sub(start).Round(time.Millisecond))
		}
		t.Logf("exec of bash -c 'echo hi' to its output, 5 in a row: %v", setups)
	})

	t.Run("host programs", func(t *testing.T) {
		t.Parallel()
		// awk is a symlink through /etc/alternatives.
		script := `awk 'BEGIN { print 6 * 7 }' && python3 -c 'print(6 * 7)'`
		var stdout, stderr bytes.Buffer
		if err := execIn(cfg, pod, []string{"bash", "-c", script}, nil, &stdout, &stderr); err != nil {
			t.Fatalf("%v; stderr %q", err, stderr.String())
		}
		if stdout.String() != "42\n42\n" {
			t.Errorf("stdout %q, want 42 twice; stderr %q", stdout.String(), stderr.String())
		}
	})

	t.Run("stdin", func(t *testing.T) {
		t.Parallel()
		in := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		var stdout, stderr bytes.Buffer
		if err := execIn(cfg, pod, []string{"cat"}, bytes.NewReader(in), &stdout, &stderr); err != nil {
			t.Fatalf("%v; stderr %q", err, stderr.String())
		}
		if !bytes.Equal(stdout.Bytes(), in) {
			t.Errorf("cat gave back %d bytes of %d", stdout.Len(), len(in))
		}
	})

	t.Run("exit status", func(t *testing.T) {
		t.Parallel()
		err := execIn(cfg, pod, []string{"bash", "-c", "exit 3"}, nil, io.Discard, io.Discard)
		var code utilexec.CodeExitError
		if !errors.As(err, &code) || code.Code != 3 {
			t.Errorf("exit 3 gave %v, want exit code 3", err)
		}
	})

	t.Run("race-built test binary", func(t *testing.T) {
		t.Parallel()
		bin, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(bin, "/tmp/") {
			t.Skipf("the test binary %s is not under /tmp, which the pod shares", bin)
		}
		var stdout, stderr bytes.Buffer
		cmd := []string{"env", "GORACE=atexit_sleep_ms=0", bin, "-test.run=^$"}
		if err := execIn(cfg, pod, cmd, nil, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v; stdout %q, stderr %q", bin, err, stdout.String(), stderr.String())
		}
		if !strings.Contains(stdout.String(), "PASS") {
			t.Errorf("%s printed %q, %q; want PASS", bin, stdout.String(), stderr.String())
		}
	})

	t.Run("shared tmp", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if !strings.HasPrefix(dir, "/tmp/") {
			t.Skipf("t.TempDir() %s is not under /tmp, which the pod shares", dir)
		}
		var b [8]byte
		rand.Read(b[:])
		word := hex.EncodeToString(b[:])
		if err := os.WriteFile(filepath.Join(dir, "in"), []byte(word), 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		script := `cd "$1" && tr a-f A-F < in > out`
		if err := execIn(cfg, pod, []string{"bash", "-c", script, "bash", dir}, nil, io.Discard, &stderr); err != nil {
			t.Fatalf("%v; stderr %q", err, stderr.String())
		}
		got, err := os.ReadFile(filepath.Join(dir, "out"))
		if want := strings.ToUpper(word); string(got) != want || err != nil {
			t.Errorf("the pod wrote %q (%v), want %q", got, err, want)
		}
	})

	t.Run("own TMPDIR", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr bytes.Buffer
		script := `d=$(mktemp -d) && echo "$d" && grep -F " $TMPDIR " /proc/self/mountinfo | cut -d' ' -f5`
		if err := execIn(cfg, pod, []string{"bash", "-c", script}, nil, &stdout, &stderr); err != nil {
			t.Fatalf("%v; stderr %q", err, stderr.String())
		}
		dir, mount, _ := strings.Cut(strings.TrimSpace(stdout.String()), "\n")
		if !strings.HasPrefix(dir, PodTmp+"/") || mount != PodTmp {
			t.Errorf("mktemp -d made %q, and $TMPDIR's mount is %q; want a directory in %s, a mount of its own", dir, mount, PodTmp)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("the pod's temporary directory %s is on the host", dir)
		}
	})

	t.Run("read-only usr", func(t *testing.T) {
		t.Parallel()
		var stderr bytes.Buffer
		err := execIn(cfg, pod, []string{"touch", "/usr/dsh-k8stest"}, nil, io.Discard, &stderr)
		if err == nil || !strings.Contains(stderr.String(), "Read-only file system") {
			t.Errorf("touch in /usr gave %v, stderr %q; want a read-only file system", err, stderr.String())
		}
	})
}

// TestNamespaceDeleted checks that a namespace Namespace made, and a pod
// in it, are gone soon after the test that made them ends: that this
// cluster's namespace controller works.
func TestNamespaceDeleted(t *testing.T) {
	t.Parallel()
	client := Client(t)
	var ns string
	t.Run("make", func(t *testing.T) {
		ns = Namespace(t)
		pod := Template(t)
		pod.Name = "pod"
		StartPod(t, ns, pod)
	})
	start := time.Now()
	if err := waitGone(client, ns); err != nil {
		n, gerr := client.Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		t.Fatalf("namespace %s was not deleted within %v: %v (now: %v %+v)", ns, testwait.Limit, err, gerr, n.Status)
	}
	t.Logf("namespace with a running pod: delete → gone %v", time.Since(start).Round(time.Millisecond))
}

// waitGone watches namespace ns until it is gone, within testwait.Limit.
func waitGone(client corev1client.CoreV1Interface, ns string) error {
	return testwait.Call("the deletion of namespace "+ns, func(ctx context.Context) error {
		n, err := client.Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		w, err := client.Namespaces().Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", ns).String(),
			ResourceVersion: n.ResourceVersion,
		})
		if err != nil {
			return err
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				return nil
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return errors.New("the watch ended before the namespace was deleted")
	})
}

// TestNamespaceName checks that namespace names are DNS labels, made from
// any test name.
func TestNamespaceName(t *testing.T) {
	for _, test := range []string{
		"TestPod",
		"TestPod/sub_test#01",
		"Test" + strings.Repeat("Long_Name", 20),
		"9lives",
		"___",
		"",
		"Test/" + strings.Repeat("x", 54) + "/-y",
	} {
		name := namespaceName(test)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("namespaceName(%q) = %q: %v", test, name, errs)
		}
		if other := namespaceName(test); other == name {
			t.Errorf("namespaceName(%q) gave %q twice", test, name)
		}
	}
	if got := namespaceName("TestPod/sub_test#01"); !strings.HasPrefix(got, "testpod-sub-test-01-") {
		t.Errorf("namespaceName(%q) = %q, want it to start testpod-sub-test-01-", "TestPod/sub_test#01", got)
	}
}

// TestWithoutCluster runs TestPod in a process with no cluster: it skips,
// saying why, except under CI=true, where it fails.
func TestWithoutCluster(t *testing.T) {
	t.Parallel()
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPod$", "-test.v")
		cmd.Env = append(os.Environ(), "KUBECONFIG=", "DSH_K8S_UP=", "CI="+ci)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := testwait.Exit(t, cmd, "the test binary")
		if ci == "" {
			if err != nil || !strings.Contains(out.String(), "--- SKIP: TestPod") ||
				!strings.Contains(out.String(), "$KUBECONFIG is not set") {
				t.Errorf("without KUBECONFIG: %v\n%s", err, out.String())
			}
			continue
		}
		if err == nil || !strings.Contains(out.String(), "--- FAIL: TestPod") ||
			!strings.Contains(out.String(), "CI=true needs it") {
			t.Errorf("without KUBECONFIG, under CI=true: %v\n%s", err, out.String())
		}
	}
}

// TestUpScript: under DSH_K8S_UP=1 without $KUBECONFIG, the tests use
// the kubeconfig up.sh prints last, and say why when it fails or prints
// something else (up.sh here is a stand-in, in $DSH_SHARED/k8s).
func TestUpScript(t *testing.T) {
	t.Parallel()
	elsewhere := filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://192.0.2.1:6443'}}]\n" +
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n"
	if err := os.WriteFile(elsewhere, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, script string
		want         []string
	}{
		{"fails", "echo 'etcd did not start' >&2; exit 3", []string{"up.sh: exit status 3", "etcd did not start"}},
		{"no path", "echo starting; echo kubeconfig", []string{`printed "starting\nkubeconfig\n", not a kubeconfig path`}},
		{"its kubeconfig is used", "echo starting; echo " + elsewhere, []string{"KUBECONFIG=" + elsewhere + ": its API server https://192.0.2.1:6443 is not on loopback"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			shared := t.TempDir()
			if err := os.Mkdir(filepath.Join(shared, "k8s"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(shared, "k8s", "up.sh"), []byte(tt.script+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestPod$", "-test.v")
			cmd.Env = append(os.Environ(), "KUBECONFIG=", "DSH_K8S_UP=1", "DSH_SHARED="+shared, "CI=")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			err := testwait.Exit(t, cmd, "the test binary")
			if err != nil || !strings.Contains(out.String(), "--- SKIP: TestPod") {
				t.Fatalf("up.sh %q: %v; want a skip:\n%s", tt.script, err, out.String())
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("up.sh %q: the skip does not say %q:\n%s", tt.script, want, out.String())
				}
			}
		})
	}
}

// execIn runs cmd in pod's main container over the exec stream
// (WebSocket, falling back to SPDY) and returns when it exits: an
// utilexec.CodeExitError if it exited non-zero.
func execIn(cfg *rest.Config, pod *corev1.Pod, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	client, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	req := client.RESTClient().Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: Container,
		Command:   cmd,
		Stdin:     stdin != nil,
		Stdout:    true,
		Stderr:    true,
	}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	exe, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return testwait.Call(strings.Join(cmd, " ")+" in pod "+pod.Name, func(ctx context.Context) error {
		return exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	})
}

// firstWrite is a writer that notes when it is first written to.
type firstWrite struct {
	w     io.Writer
	mu    sync.Mutex
	first time.Time
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.mu.Lock()
	if f.first.IsZero() {
		f.first = time.Now()
	}
	f.mu.Unlock()
	return f.w.Write(p)
}

func (f *firstWrite) at() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}
