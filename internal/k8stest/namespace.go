package k8stest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/dshgo/dsh/internal/testwait"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
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
func Namespace(t testing.TB) string {
	t.Helper()
	client := Client(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        namespaceName(t.Name()),
		Labels:      map[string]string{Label: "true"},
		Annotations: map[string]string{"dsh.test/name": t.Name()},
	}}
	ns, err := testwait.Reply("create namespace", func(ctx context.Context) (*corev1.Namespace, error) {
		return client.Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := testwait.Call("delete namespace "+ns.Name, func(ctx context.Context) error {
			return client.Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	sas := client.ServiceAccounts(ns.Name)
	err = testwait.Call("the default ServiceAccount of namespace "+ns.Name, func(ctx context.Context) error {
		return until(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return sas.List(ctx, opts)
		}, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return sas.Watch(ctx, opts)
		}, "default", func(runtime.Object) (bool, error) { return true, nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
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
