package k8s

import (
	"errors"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Labels and annotations dsh-bash puts on the pods it makes.
const (
	// LabelManagedBy is app.kubernetes.io/managed-by, set to "dsh-bash".
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelInstance names the server (Options.Instance) that made a pod.
	LabelInstance = "dsh-bash/instance"
	// LabelSession is a hash of the session a pod serves, or "warm" for a
	// pod waiting for one.
	LabelSession = "dsh-bash/session"

	// AnnotationOwner says which process made a pod:
	// "HOST BOOT-ID PID START PID-NAMESPACE", START the process's start
	// time in clock ticks after boot. A server starting on the same host,
	// in the same pid namespace, deletes the pods of an owner that is gone
	// (see Options.KeepOrphans).
	AnnotationOwner = "dsh-bash/owner"
	// AnnotationWorkspace, on a template, is the sessions' directory in the
	// pod, where the URL names none.
	AnnotationWorkspace = "dsh-bash/workspace"

	managedBy = "dsh-bash"
	warm      = "warm"
)

// keepAlive is the command of a container that has none: it waits, and
// ends at once on SIGTERM.
var keepAlive = []string{"sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"}

// LoadTemplate reads a pod template: a Pod manifest in YAML or JSON
// (apiVersion v1, kind Pod; its name and namespace are left out, as
// dsh-bash names each pod). Unknown fields are an error.
func LoadTemplate(path string) (*corev1.Pod, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pod template: %w", err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		return nil, fmt.Errorf("pod template %s: %w", path, err)
	}
	if pod.Kind != "" && pod.Kind != "Pod" || pod.APIVersion != "" && pod.APIVersion != "v1" {
		return nil, fmt.Errorf("pod template %s: want apiVersion v1, kind Pod, not %s %s", path, pod.APIVersion, pod.Kind)
	}
	if err := checkTemplate(&pod, ""); err != nil {
		return nil, fmt.Errorf("pod template %s: %w", path, err)
	}
	return &pod, nil
}

// checkTemplate checks that a template has the container named (""
// the first) with an image.
func checkTemplate(t *corev1.Pod, container string) error {
	c := findContainer(t, container)
	switch {
	case len(t.Spec.Containers) == 0:
		return errors.New("the pod has no container")
	case c == nil:
		return fmt.Errorf("the pod has no container %q", container)
	case c.Image == "":
		return fmt.Errorf("container %q has no image", c.Name)
	}
	return nil
}

// findContainer is the container named, or the first for "".
func findContainer(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if name == "" || p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	return nil
}

// podFrom makes a pod of the template: its name, our labels and
// annotations, and the defaults a session's pod needs where the template
// sets none (see Options.Template).
func podFrom(t *corev1.Pod, container, name string, labels map[string]string, owner string) *corev1.Pod {
	p := t.DeepCopy()
	p.TypeMeta = metaTypePod
	p.Name, p.GenerateName, p.Namespace, p.ResourceVersion, p.UID = name, "", "", "", ""
	p.OwnerReferences = nil
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	for k, v := range labels {
		p.Labels[k] = v
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[AnnotationOwner] = owner
	s := &p.Spec
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(int64(1))
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyNever // a restarted container has lost the session
	}
	if s.AutomountServiceAccountToken == nil {
		s.AutomountServiceAccountToken = ptr(false) // commands get no API credentials
	}
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr(false)
	}
	c := findContainer(p, container)
	if len(c.Command) == 0 && len(c.Args) == 0 {
		c.Command = keepAlive
	}
	return p
}

var metaTypePod = corev1.Pod{}.TypeMeta

func ptr[T any](v T) *T { return &v }
