package toolbash

import "fmt"

// PodText is what the model's instructions say where each session runs in
// a Kubernetes pod of its own, in namespace.
func PodText(namespace string) string {
	return fmt.Sprintf("Commands run in a Kubernetes pod of this session's own (namespace %s), not on the client's machine: paths are the pod's, and its files and background tasks last only as long as the session (the pod is deleted when it ends). "+
		"Inside the pod, dsh-bash adds its own sandbox where the pod allows one: pods usually block the user namespaces a jail needs, so its Landlock layer, which gives commands no private /tmp or network.", namespace)
}
