//go:build linux

package k8s

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/k8stest"
	"github.com/dshgo/dsh/internal/testwait"
)

// podLister lists pods: podClient.List, or client-go's.
type podLister func(context.Context, metav1.ListOptions) (*corev1.PodList, error)

// livePods are the names of the pods labelled sel, but those being
// deleted.
func livePods(tb testing.TB, list podLister, sel labels.Set) []string {
	tb.Helper()
	pods, err := list(context.Background(), metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// podOf is the name of the pod serving owner's session.
func podOf(t *testing.T, e *Executor, owner string) string {
	t.Helper()
	names := livePods(t, e.client.Pods(e.opts.Namespace).List, labels.Set{LabelInstance: e.opts.Instance, LabelSession: sessionLabel(owner)})
	if len(names) != 1 {
		t.Fatalf("pods of session %s: %v, want one", owner, names)
	}
	return names[0]
}

// gone reports whether a pod is deleted or being deleted.
func gone(t *testing.T, e *Executor, name string) bool {
	p, err := e.client.Pods(e.opts.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.DeletionTimestamp != nil
}

// TestPodPerSession: two sessions get two pods, each labelled for the
// server and its session. A session whose pod is deleted during a call
// gets that call's link error, then an error saying the pod is gone, and
// its next call runs in a new pod; the other session goes on. A
// session's end deletes its pod, Close the rest. (One test: each pod
// started costs the cluster about a second of CPU.)
func TestPodPerSession(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	e := k.executor(t, bashtest.Config{Cwd: t.TempDir()}, nil)
	defer e.Close()
	for _, owner := range []string{"victim", "other"} {
		if res, err := run(e, owner, "hostname"); err != nil || res.ExitCode != 0 {
			t.Fatalf("run of %s: %v %+v", owner, err, res)
		}
	}
	name, other := podOf(t, e, "victim"), podOf(t, e, "other")
	if name == other {
		t.Fatalf("two sessions share pod %s", name)
	}
	again := deleteMidCall(t, e, "victim", name)
	if res, err := run(e, "other", "echo fine"); err != nil || res.Stdout.Text != "fine\n" {
		t.Errorf("the other session: %v %+v", err, res)
	}
	if _, err := testwait.Reply("end of the other session", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, e.EndOwner(ctx, "other")
	}); err != nil {
		t.Fatal(err)
	}
	if !gone(t, e, other) || gone(t, e, again) {
		t.Errorf("after the other session's end: its pod gone %v (want true), the victim's new pod's gone %v (want false)", gone(t, e, other), gone(t, e, again))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(t, e, again) {
		t.Errorf("pod %s outlived Close", again)
	}
}

// deleteMidCall deletes pod name, owner's, during a call of owner's, and
// checks what the call and the next two say; it returns the pod the last
// of them ran in.
func deleteMidCall(t *testing.T, e *Executor, owner, name string) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo") // the pod has the host's /tmp
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := run(e, owner, "echo started > "+fifo+"; sleep 60")
		errc <- err
	}()
	testwait.ReadFIFO(t, fifo, "the start of the call in the pod to be deleted")
	if err := e.client.Pods(e.opts.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	err, werr := testwait.Wait(errc, "the end of the call whose pod was deleted")
	if werr != nil {
		t.Fatal(werr)
	}
	var le *bash.LinkError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), name) {
		t.Errorf("call during the deletion: err = %v, want a *bash.LinkError naming %s", err, name)
	}
	_, err = run(e, owner, "true")
	var ge *GoneError
	if !errors.As(err, &ge) || ge.Pod != name {
		t.Errorf("next call: err = %v, want a *GoneError of %s", err, name)
	}
	res, err := run(e, owner, "echo again")
	if err != nil || res.Stdout.Text != "again\n" {
		t.Fatalf("the call after: %v %+v, want it to run in a new pod", err, res)
	}
	again := podOf(t, e, owner)
	if again == name {
		t.Errorf("the call after ran in pod %s, which was deleted", name)
	}
	return again
}

// TestPodCannotStart: an image that does not exist, a pod no node takes,
// and a namespace's quota fail the session's first call within a bounded
// time with the reason from the pod's status or the API server.
func TestPodCannotStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want string
		edit       func(*corev1.Pod)
		quota      bool
		timeout    bool // the reason comes only when StartTimeout ends
	}{
		{name: "no image", want: "ErrImageNeverPull", edit: func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "local/no-such-image:1"
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		}},
		{name: "unschedulable", want: "Unschedulable", timeout: true, edit: func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"dsh-bash-test/none": "x"}
		}},
		{name: "quota", want: "exceeded quota", quota: true, edit: func(*corev1.Pod) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := newCluster(t)
			if tt.quota {
				k = ownCluster(t) // where the quota stops no other test's pods
				noPods(t, k.ns)
			}
			e := k.executor(t, bashtest.Config{}, func(o *Options) {
				tt.edit(o.Template)
				o.StartTimeout = testwait.Limit / 2 // the image's absence is known sooner, however loaded the machine
				if tt.timeout {
					o.StartTimeout = 3 * time.Second
				}
			})
			defer e.Close()
			_, err := run(e, "s", "true")
			var se *StartError
			switch {
			case tt.quota:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want one saying %s", err, tt.want)
				}
			case !errors.As(err, &se) || !strings.Contains(se.Reason, tt.want) || (se.Timeout > 0) != tt.timeout:
				t.Fatalf("err = %v, want a *StartError saying %s (timeout %v)", err, tt.want, tt.timeout)
			}
			for _, name := range livePods(t, e.client.Pods(e.opts.Namespace).List, labels.Set{LabelInstance: e.opts.Instance}) {
				t.Errorf("pod %s that could not start was not deleted", name)
			}
		})
	}
}

// noPods gives namespace ns a quota of no pods, and waits until the
// quota controller has counted it: before, the API server's admission
// may not know it yet (its cache of a namespace without quotas lasts
// seconds), and lets a pod through.
func noPods(t *testing.T, ns string) {
	t.Helper()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	quotas := k8stest.Client(t).ResourceQuotas(ns)
	if _, err := quotas.Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	counted := testwait.Until(func() bool {
		got, err := quotas.Get(context.Background(), q.Name, metav1.GetOptions{})
		return err == nil && len(got.Status.Hard) > 0
	})
	if !counted {
		t.Fatal("the quota controller did not count the quota")
	}
}

// TestWarmClaimedOnce: of two claims of one warm pod at once, one wins;
// sessions starting together with one warm pod all get pods of their
// own.
func TestWarmClaimedOnce(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	e := k.executor(t, bashtest.Config{Cwd: t.TempDir()}, func(o *Options) { o.Warm = 1 })
	defer e.Close()
	w := waitWarm(t, e, 1)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = e.claimPod(context.Background(), w[0], sessionLabel(string(rune('a'+i)))) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, errClaimed):
			t.Errorf("claim: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("claims of one warm pod that won: %d (%v), want 1", won, errs)
	}
}

// waitWarm waits until the pool holds n warm pods, and returns their
// names.
func waitWarm(t testing.TB, e *Executor, n int) []string {
	t.Helper()
	timer := time.NewTimer(testwait.Limit)
	defer timer.Stop()
	for {
		e.pool.mu.Lock()
		var names []string
		for _, r := range e.pool.ready {
			names = append(names, r.pod.Name)
		}
		changed := e.pool.changed
		e.pool.mu.Unlock()
		if len(names) >= n {
			return names
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("warm pods after %v: %v, want %d", testwait.Limit, names, n)
		}
	}
}

// TestCallDeadlineDuringStart: a call whose own deadline ends while its
// pod starts says so, not that the pod did not start within StartTimeout.
func TestCallDeadlineDuringStart(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	e := k.executor(t, bashtest.Config{}, func(o *Options) {
		o.Template.Spec.NodeSelector = map[string]string{"dsh-bash-test/none": "x"}
		o.StartTimeout = time.Hour
	})
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "s"})
	t.Logf("the call: %v", err)
	var se *StartError
	if errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the call's deadline, not a *StartError", err)
	}
}

// TestAPIServerGone: when the API server goes away mid-session, the
// session's calls fail saying so, not that a program is missing.
func TestAPIServerGone(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	p := newCutProxy(t, k.config.Host)
	k.config.Host = p.Host()
	e := k.executor(t, bashtest.Config{Cwd: t.TempDir()}, nil)
	defer e.Close()
	if _, err := run(e, "s", "true"); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	_, err := run(e, "s", "true")
	t.Logf("the call as the API server went: %v", err)
	if _, err = run(e, "s", "true"); err == nil || !strings.Contains(err.Error(), "API server") || strings.Contains(err.Error(), "installed") {
		t.Errorf("the next call: err = %v, want one saying the API server does not answer", err)
	}
	t.Logf("the next call: %v", err)
}

// TestWarmStreamFails: a warm pod that started but whose stream could not
// be opened is deleted, not left running.
func TestWarmStreamFails(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	failed := make(chan string, 1)
	e := k.executor(t, bashtest.Config{}, func(o *Options) {
		o.Logf = func(format string, args ...any) {
			select {
			case failed <- fmt.Sprintf(format, args...):
			default:
			}
		}
	})
	defer e.Close()
	e.config.TLSClientConfig.CAData = []byte("no such CA") // exec streams fail; the client made already works
	e.config.TLSClientConfig.CAFile = ""
	e.pool.mu.Lock()
	e.pool.n = 1
	e.pool.mu.Unlock()
	e.pool.fill()
	msg, err := testwait.Wait(failed, "the warm pod's failure")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(msg)
	for _, name := range livePods(t, e.client.Pods(e.opts.Namespace).List, labels.Set{LabelInstance: e.opts.Instance}) {
		t.Errorf("warm pod %s whose stream failed was not deleted", name)
	}
}

// TestCreateCancelled: a call whose context ends while the API server is
// making its pod leaves no pod behind.
func TestCreateCancelled(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	upstream, err := rest.TransportFor(k.config)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(k.config.Host)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = upstream
	created := make(chan struct{}, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/pods") {
			rp.ServeHTTP(w, r)
			return
		}
		// The pod is made, but the reply comes only once the client
		// has given up.
		req := r.Clone(context.WithoutCancel(r.Context()))
		req.URL.Scheme, req.URL.Host, req.RequestURI = target.Scheme, target.Host, ""
		resp, err := upstream.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		created <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	k.config.Host = srv.URL
	k.config.TLSClientConfig = rest.TLSClientConfig{Insecure: true}
	e := k.executor(t, bashtest.Config{}, nil)
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if _, err := testwait.Wait(created, "the pod's creation"); err == nil {
			cancel()
		}
	}()
	_, err = e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "s"})
	cancel()
	t.Logf("the call: %v", err)
	for _, name := range livePods(t, k8stest.Client(t).Pods(k.ns).List, labels.Set{LabelInstance: e.opts.Instance}) {
		t.Errorf("pod %s made for a call that gave up is still there", name)
	}
}
