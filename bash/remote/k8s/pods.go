package k8s

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/dshgo/dsh/bash"
)

// StartError is a pod that did not start: its reason is read from the
// pod's status and events.
type StartError struct {
	Namespace, Pod string
	// Reason is why: a container's waiting reason and message
	// (ErrImageNeverPull: …), the scheduler's (Unschedulable: …), or the
	// pod's end.
	Reason string
	// Timeout is set when the pod was still not running after
	// Options.StartTimeout.
	Timeout time.Duration
}

func (e *StartError) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("pod %s/%s did not start within %v: %s", e.Namespace, e.Pod, e.Timeout, e.Reason)
	}
	return fmt.Sprintf("pod %s/%s cannot start: %s", e.Namespace, e.Pod, e.Reason)
}

// GoneError is a session's pod that is gone or has ended: deleted, its
// node lost, its container ended. The session's tasks and files went with
// it.
type GoneError struct {
	Namespace, Pod string
	// Reason says how, as the API server tells it.
	Reason string
	Err    error // the stream's own error
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("the session's pod %s/%s is gone (%s); its tasks and files went with it", e.Namespace, e.Pod, e.Reason)
}

func (e *GoneError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, bash.ErrGone) true: the session gets a new pod
// on its next call.
func (e *GoneError) Is(target error) bool { return target == bash.ErrGone }

// pods makes, watches and deletes pods in one namespace.
type pods struct {
	client    *coreClient
	ns        string
	container string
	timeout   time.Duration // StartTimeout
}

// create makes a pod of p, its name generated.
func (m *pods) create(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	made, err := m.client.Pods(m.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a pod in namespace %s: %w", m.ns, err)
	}
	return made, nil
}

// errStartTimeout ends waitRunning's ctx at StartTimeout.
var errStartTimeout = errors.New("the pod's start timed out")

// waitRunning waits until the pod's container runs, at most StartTimeout;
// a pod that cannot start fails at once with a *StartError.
func (m *pods) waitRunning(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, m.timeout, errStartTimeout)
	defer cancel()
	rv := p.ResourceVersion
	for {
		if ok, reason := m.state(p); ok {
			return p, nil
		} else if reason != "" {
			return nil, &StartError{Namespace: m.ns, Pod: p.Name, Reason: m.withEvents(ctx, p, reason)}
		}
		w, err := m.client.Pods(m.ns).Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", p.Name).String(),
			ResourceVersion: rv,
		})
		if err != nil {
			return nil, m.startErr(ctx, p, err)
		}
		p, rv, err = m.next(ctx, w, p, rv)
		if err != nil {
			return nil, err
		}
	}
}

// next reads the watch until the pod changes in a way that matters, the
// watch ends (to be made again from rv), or ctx ends.
func (m *pods) next(ctx context.Context, w watch.Interface, p *corev1.Pod, rv string) (*corev1.Pod, string, error) {
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return p, rv, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return nil, "", &StartError{Namespace: m.ns, Pod: p.Name, Reason: "the pod was deleted while it started"}
			case watch.Error:
				return p, "", nil // too old a version: read it again from the start
			}
			if np, ok := ev.Object.(*corev1.Pod); ok {
				if done, reason := m.state(np); done || reason != "" {
					return np, np.ResourceVersion, nil
				}
				p, rv = np, np.ResourceVersion
			}
		case <-ctx.Done():
			return nil, "", m.startErr(ctx, p, ctx.Err())
		}
	}
}

// startErr is the error of a pod not running when ctx ended or the API
// failed: at StartTimeout, its reason, read again from the pod and its
// events.
func (m *pods) startErr(ctx context.Context, p *corev1.Pod, err error) error {
	switch {
	case ctx.Err() == nil:
		return fmt.Errorf("waiting for pod %s/%s: %w", m.ns, p.Name, err)
	case context.Cause(ctx) != errStartTimeout: // the caller's ctx ended first
		return fmt.Errorf("pod %s/%s had not started when the call ended (%s): %w", m.ns, p.Name, pending(p), ctx.Err())
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if np, gerr := m.client.Pods(m.ns).Get(rctx, p.Name, metav1.GetOptions{}); gerr == nil {
		p = np
	}
	return &StartError{Namespace: m.ns, Pod: p.Name, Timeout: m.timeout, Reason: m.withEvents(rctx, p, pending(p))}
}

// state says whether the pod's container runs, or else why it never will
// ("" while it may yet).
func (m *pods) state(p *corev1.Pod) (running bool, reason string) {
	if p.DeletionTimestamp != nil {
		return false, "the pod is being deleted"
	}
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return false, ended(p)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if m.container != "" && cs.Name != m.container {
			continue
		}
		if cs.State.Running != nil && p.Status.Phase == corev1.PodRunning {
			return true, ""
		}
		if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			return false, w.Reason + ": " + w.Message
		}
		if t := cs.State.Terminated; t != nil {
			return false, fmt.Sprintf("its container ended (%s, exit code %d): %s", t.Reason, t.ExitCode, t.Message)
		}
		break
	}
	return false, ""
}

// fatalWaiting are the waiting reasons of a container that will not start
// without a change to the image or the template.
var fatalWaiting = map[string]bool{
	"ErrImageNeverPull": true, "InvalidImageName": true, "ErrImagePull": true, "ImagePullBackOff": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"CrashLoopBackOff": true,
}

// ended says how a pod that has ended ended.
func ended(p *corev1.Pod) string {
	why := "the pod ended (" + string(p.Status.Phase) + ")"
	if r := strings.TrimSpace(p.Status.Reason + " " + p.Status.Message); r != "" {
		why += ": " + r
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			why += fmt.Sprintf("; container %s: %s, exit code %d %s", cs.Name, t.Reason, t.ExitCode, t.Message)
		}
	}
	return strings.TrimSpace(why)
}

// pending says why a pod has not started yet: the scheduler's condition,
// a container's waiting reason, or its phase.
func pending(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return strings.TrimSpace(w.Reason + ": " + w.Message)
		}
	}
	return "still " + cmp.Or(string(p.Status.Phase), "Pending")
}

// withEvents adds the pod's latest warning events to reason (at most
// three, oldest first). Events need the list verb on events; without it
// reason stays as it is.
func (m *pods) withEvents(ctx context.Context, p *corev1.Pod, reason string) string {
	evs, err := m.client.Events(m.ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": p.Name, "involvedObject.kind": "Pod"}.AsSelector().String(),
	})
	if err != nil {
		return reason
	}
	slices.SortFunc(evs.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
	var seen []string
	for _, e := range evs.Items {
		line := e.Reason + ": " + e.Message
		if e.Type != corev1.EventTypeWarning || slices.Contains(seen, line) || strings.Contains(reason, e.Message) {
			continue
		}
		seen = append(seen, line)
	}
	if len(seen) > 3 {
		seen = seen[len(seen)-3:]
	}
	if len(seen) == 0 {
		return reason
	}
	return reason + " (events: " + strings.Join(seen, "; ") + ")"
}

// delete deletes a pod with its own grace period, and does not wait for
// it to be gone.
func (m *pods) delete(ctx context.Context, name string) error {
	err := m.client.Pods(m.ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", m.ns, name, err)
	}
	return nil
}

// gone explains the error that ended a stream to a session's pod: a
// *GoneError when the pod is gone or ended, the API server not answering,
// else err.
func (m *pods) gone(name string, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, gerr := m.client.Pods(m.ns).Get(ctx, name, metav1.GetOptions{})
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(gerr):
		return &GoneError{Namespace: m.ns, Pod: name, Reason: "deleted", Err: err}
	case gerr != nil && !errors.As(gerr, &status):
		return fmt.Errorf("the Kubernetes API server does not answer: %w", err)
	case gerr != nil:
		return err
	case p.DeletionTimestamp != nil:
		return &GoneError{Namespace: m.ns, Pod: name, Reason: "being deleted", Err: err}
	}
	if ok, reason := m.state(p); !ok && reason != "" {
		return &GoneError{Namespace: m.ns, Pod: name, Reason: reason, Err: err}
	}
	return err
}
