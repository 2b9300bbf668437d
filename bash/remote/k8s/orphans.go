package k8s

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ownerAnnotation is AnnotationOwner for this process: "HOST BOOT-ID PID
// START PID-NAMESPACE".
func ownerAnnotation() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return fmt.Sprintf("%s %s %d %d %s", host, bootID(), pid, processStart(pid), pidNamespace())
}

// orphaned reports whether the process an AnnotationOwner names is gone:
// it was on this host, and the host has been rebooted since, or it was in
// this pid namespace and no process with that pid and start time runs. A
// pod of another host, or of another pid namespace of this one (a
// container with the host's name), is not judged.
func orphaned(owner string) bool {
	f := strings.Fields(owner)
	host, _ := os.Hostname()
	if len(f) != 5 || f[0] != host || bootID() == "" {
		return false
	}
	if f[1] != bootID() {
		return true
	}
	if ns := pidNamespace(); ns == "" || f[4] != ns {
		return false // its pids are not ours
	}
	pid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[3], 10, 64)
	if err1 != nil || err2 != nil || start == 0 {
		return false
	}
	return processStart(pid) != start
}

// deleteOrphans deletes the pods of servers gone from this host, warm or
// serving a session.
func (e *Executor) deleteOrphans(ctx context.Context) error {
	sel := labels.SelectorFromSet(labels.Set{LabelManagedBy: managedBy}).String()
	list, err := e.client.Pods(e.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("kubernetes: listing the pods of namespace %s: %w", e.opts.Namespace, err)
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || !orphaned(p.Annotations[AnnotationOwner]) {
			continue
		}
		if err := e.pods.delete(ctx, p.Name); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		e.logf("deleted %d pods of a dsh-bash gone from this host", n)
	}
	return nil
}

// logf reports through Options.Logf.
func (e *Executor) logf(format string, args ...any) {
	if e.opts.Logf != nil {
		e.opts.Logf(format, args...)
	}
}
