//go:build linux

package k8stest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dshgo/dsh/internal/testwait"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Container is the name of the template's one container.
const Container = "main"

// PodTmp is the $TMPDIR of the template's pods: a directory of the pod's
// own (an emptyDir), where the host's /tmp is shared.
const PodTmp = "/var/tmp"

// Template returns a pod template for tests, without a name or namespace:
// Image's image, whose one container ("main") runs this machine's bash
// from its /usr, mounted read-only at /usr. This machine's /tmp is
// mounted read-write at /tmp, so that the test binary (under
// /tmp/go-build…) and t.TempDir()'s directories are in the pod at the
// same paths; $TMPDIR is the pod's own PodTmp, so that what a program in
// the pod makes in its temporary directory, or removes there as left by
// processes it cannot see, is not the host's. The pod shares the host's network, mounts no
// ServiceAccount token, and dies at once when deleted: its PID 1 exits on
// SIGTERM, and its grace period is 0.
func Template(t testing.TB) *corev1.Pod {
	t.Helper()
	image := Image(t)
	hostPath := func(name, path string, readOnly bool) (corev1.Volume, corev1.VolumeMount) {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: new(corev1.HostPathDirectory)},
			}}, corev1.VolumeMount{
				Name: name, MountPath: path, ReadOnly: readOnly,
			}
	}
	usr, usrMount := hostPath("host-usr", "/usr", true)
	tmp, tmpMount := hostPath("host-tmp", "/tmp", false)
	// The pod's own temporary directory, for what cleans up by pid: a
	// dsh-bash starting removes the spill and jail directories in
	// $TMPDIR whose process is gone, and the host's live ones are gone
	// from the pod's pid namespace.
	podTmp := corev1.Volume{Name: "pod-tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	podTmpMount := corev1.VolumeMount{Name: "pod-tmp", MountPath: PodTmp}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{Label: "true"}},
		Spec: corev1.PodSpec{
			HostNetwork:                   true,
			DNSPolicy:                     corev1.DNSDefault, // no cluster DNS
			TerminationGracePeriodSeconds: new(int64(0)),
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			RestartPolicy:                 corev1.RestartPolicyNever,
			Volumes:                       []corev1.Volume{usr, tmp, podTmp},
			Containers: []corev1.Container{{
				Name:            Container,
				Image:           image,
				ImagePullPolicy: corev1.PullNever, // there is no registry
				// PID 1 ignores signals it has no handler for: trap
				// TERM, so that the kubelet's SIGTERM ends the pod at
				// once rather than after its minimum grace of 2 s.
				Command: []string{"/bin/bash", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"},
				Env: []corev1.EnvVar{
					{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
					{Name: "TMPDIR", Value: PodTmp},
				},
				VolumeMounts: []corev1.VolumeMount{usrMount, tmpMount, podTmpMount},
			}},
		},
	}
}

// StartPod creates pod in namespace ns and waits until it runs. It fails
// the test at once with the reason if the pod cannot run (an image
// missing, a container that exits), and within testwait.Limit if it does
// not run by then, saying how far it got. The pod is deleted when the
// test ends, with no grace period and without waiting for it to be gone.
func StartPod(t testing.TB, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	pods := Client(t).Pods(ns)
	created, err := testwait.Reply("create pod", func(ctx context.Context) (*corev1.Pod, error) {
		return pods.Create(ctx, pod, metav1.CreateOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := testwait.Call("delete pod "+ns+"/"+created.Name, func(ctx context.Context) error {
			return pods.Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	last := created
	err = testwait.Call("pod "+ns+"/"+created.Name+" running", func(ctx context.Context) error {
		return until(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, opts)
		}, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, opts)
		}, created.Name, func(obj runtime.Object) (bool, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return false, nil
			}
			last = p
			return podRunning(p)
		})
	})
	if err != nil {
		t.Fatalf("%v; the pod: %s", err, podState(last))
	}
	return last
}

// podRunning reports whether p runs, or why it never will.
func podRunning(p *corev1.Pod) (bool, error) {
	switch p.Status.Phase {
	case corev1.PodRunning:
		return true, nil
	case corev1.PodSucceeded, corev1.PodFailed:
		return false, fmt.Errorf("pod %s ended", p.Name)
	}
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName",
				"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff":
				return false, fmt.Errorf("pod %s cannot run", p.Name)
			}
		}
	}
	return false, nil
}

// podState says how far a pod got: its phase, its conditions that do not
// hold, and its containers' states.
func podState(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %q", p.Status.Phase)
	if p.Status.Reason != "" {
		fmt.Fprintf(&b, " (%s: %s)", p.Status.Reason, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			fmt.Fprintf(&b, "; %s %s", c.Type, c.Status)
			if c.Reason != "" || c.Message != "" {
				fmt.Fprintf(&b, " (%s: %s)", c.Reason, c.Message)
			}
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			fmt.Fprintf(&b, "; container %s waiting (%s: %s)", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
		case c.State.Terminated != nil:
			fmt.Fprintf(&b, "; container %s exited %d (%s: %s)", c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason, c.State.Terminated.Message)
		}
	}
	return b.String()
}
