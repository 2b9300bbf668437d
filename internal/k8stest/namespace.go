package k8stest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/dshgo/dsh/internal/testwait"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// Label marks what this package makes in the cluster (its value is
// "true"), so that what a killed test left can be found.
const Label = "dsh.test/k8stest"

// Namespace creates a namespace of the test's own and returns its name,
// made from the test's name and a random suffix. It is deleted when the
// test ends; the cleanup does not wait until it is gone (the namespace
// controller then deletes what is left in it).
//
// It returns once the namespace's default ServiceAccount exists: the API
// server refuses pods in a namespace that lacks the ServiceAccount they
// run as, even those that mount no token.
//
// A namespace costs the cluster some half a CPU-second to make and
// delete: tests whose pods need no namespace alone (no quota in it, no
// cleanup of every orphan in it) share one (SharedNamespace).
func Namespace(t testing.TB) string {
	t.Helper()
	name, err := makeNamespace(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := deleteNamespace(name); err != nil {
			t.Error(err)
		}
	})
	return name
}

// shared is the namespace of SharedNamespace.
var shared struct {
	mu   sync.Mutex
	name string
	err  error
}

// SharedNamespace is a namespace that the tests of this process share,
// made on the first call (as Namespace makes one) and deleted by
// RemoveSharedNamespace, which TestMain calls after the tests. Tests in
// it tell their pods apart by their own labels.
func SharedNamespace(t testing.TB) string {
	t.Helper()
	Config(t) // skips without a cluster, as Namespace does
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.name == "" && shared.err == nil {
		shared.name, shared.err = makeNamespace("shared")
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.name
}

// RemoveSharedNamespace deletes the namespace of SharedNamespace, if one
// was made, without waiting until it is gone.
func RemoveSharedNamespace() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.name == "" {
		return nil
	}
	err := deleteNamespace(shared.name)
	shared.name, shared.err = "", nil
	return err
}

// makeNamespace creates a namespace named after test and waits for its
// default ServiceAccount.
func makeNamespace(test string) (string, error) {
	client, err := clusterClient()
	if err != nil {
		return "", err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        namespaceName(test),
		Labels:      map[string]string{Label: "true"},
		Annotations: map[string]string{"dsh.test/name": test},
	}}
	ns, err = testwait.Reply("create namespace", func(ctx context.Context) (*corev1.Namespace, error) {
		return client.Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	})
	if err != nil {
		return "", err
	}
	sas := client.ServiceAccounts(ns.Name)
	err = testwait.Call("the default ServiceAccount of namespace "+ns.Name, func(ctx context.Context) error {
		return until(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return sas.List(ctx, opts)
		}, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return sas.Watch(ctx, opts)
		}, "default", func(runtime.Object) (bool, error) { return true, nil })
	})
	if err != nil {
		deleteNamespace(ns.Name)
		return "", err
	}
	return ns.Name, nil
}

// deleteNamespace deletes namespace name, without waiting until it is
// gone; one already gone is no error.
func deleteNamespace(name string) error {
	client, err := clusterClient()
	if err != nil {
		return err
	}
	err = testwait.Call("delete namespace "+name, func(ctx context.Context) error {
		return client.Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// clusterClient is a core/v1 client of the test cluster.
func clusterClient() (corev1client.CoreV1Interface, error) {
	c, err := cluster()
	if err != nil {
		return nil, err
	}
	return corev1client.NewForConfig(rest.CopyConfig(c.config))
}

// namespaceName makes a namespace's name (a DNS label: at most 63 lower
// case letters, digits and dashes, starting and ending with one of the
// first two) from a test's name and a random suffix.
func namespaceName(test string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(test) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	var suffix [4]byte
	rand.Read(suffix[:])
	tail := "-" + hex.EncodeToString(suffix[:])
	name := b.String()
	if max := 63 - len(tail); len(name) > max {
		name = name[:max]
	}
	name = strings.TrimRight(name, "-")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		// A test name starting with a digit, or with nothing usable.
		name = "t" + name
		if len(name) > 63-len(tail) {
			name = strings.TrimRight(name[:63-len(tail)], "-")
		}
	}
	return name + tail
}

// until waits, until ctx ends, for the object called name to exist and
// satisfy cond, which may also give up on it with an error. It lists, to
// see the object as it is, then watches from there.
func until(ctx context.Context,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFrom func(context.Context, metav1.ListOptions) (watch.Interface, error),
	name string, cond func(runtime.Object) (bool, error)) error {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	for {
		l, err := list(ctx, opts)
		if err != nil {
			return err
		}
		items, rv, err := itemsOf(l)
		if err != nil {
			return err
		}
		for _, obj := range items {
			if ok, err := cond(obj); ok || err != nil {
				return err
			}
		}
		wopts := opts
		wopts.ResourceVersion = rv
		w, err := watchFrom(ctx, wopts)
		if err != nil {
			return err
		}
		done, err := drain(ctx, w, cond)
		w.Stop()
		if done || err != nil {
			return err
		}
		// The watch ended (the server closes them now and then): list
		// again.
	}
}

// drain reads w's events until cond holds, ctx ends or w ends (done is
// false then).
func drain(ctx context.Context, w watch.Interface, cond func(runtime.Object) (bool, error)) (done bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if ok, err := cond(ev.Object); ok || err != nil {
					return true, err
				}
			case watch.Error:
				return false, apierrors.FromObject(ev.Object)
			}
		}
	}
}

// itemsOf returns the items of a list, and its resource version.
func itemsOf(l runtime.Object) ([]runtime.Object, string, error) {
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, "", err
	}
	acc, err := meta.ListAccessor(l)
	if err != nil {
		return nil, "", err
	}
	return items, acc.GetResourceVersion(), nil
}
