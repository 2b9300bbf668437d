//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dshgo/dsh/bash/remote/k8s"
	"github.com/dshgo/dsh/internal/k8stest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPKubernetes: dsh-bash mcp --remote k8s://NS runs every tool in a
// pod of the session's own, says so to the model, enforces its deny rules
// at exec in the pod, and deletes the pod when the session ends; doctor
// makes a pod and reports what serves there (the Landlock layer: the
// test pods cannot mount a jail's /proc).
func TestMCPKubernetes(t *testing.T) {
	t.Parallel()
	ns := k8stest.Namespace(t)
	tmpl := k8stest.Template(t) // the host's /usr and /tmp, where this dsh-bash is
	b, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pod.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	flags := []string{"--remote", "k8s://" + ns + ws, "--k8s-template", file, "--kubeconfig", k8stest.Kubeconfig(t), "--remote-command", binary + " executor", "--deny", "touch"}
	out, errOut, code := dshBash(t, ws, append([]string{"doctor"}, flags...)...)
	for _, want := range []string{"in a Kubernetes pod of each session's own, namespace " + ns, "probe pod: pod " + ns + "/dsh-", "containment there: sandbox (landlock layer)", "workspace there: " + ws} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("doctor: exit %d, no %q in:\n%s%s", code, want, out, errOut)
		}
	}
	cs, _ := mcpClient(t, flags...)
	if init := cs.InitializeResult().Instructions; !strings.Contains(init, "Kubernetes pod of this session's own (namespace "+ns+")") {
		t.Errorf("the instructions do not say where commands run: %s", init)
	}
	// The first call waits for the session's pod to start.
	first, err := testwait.ReplyWithin(k8stest.StartLimit, "the first call", func(ctx context.Context) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true", "description": "Start"}})
	})
	if err != nil || first.IsError {
		t.Fatalf("the first call: %v %+v", err, first)
	}
	if got := callText(t, cs, "bash", map[string]any{"command": "grep -c kubepods /proc/self/cgroup >/dev/null && echo in a pod; pwd", "description": "Where"}); got != "in a pod\n"+ws+"\n" {
		t.Errorf("bash: %q", got)
	}
	if got := callText(t, cs, "bash", map[string]any{"command": "printf 'touch planted\\n' > s.sh; sh s.sh; echo went on", "description": "Touch"}); !strings.Contains(got, "went on\n") || !strings.Contains(got, "[refused by deny rule `touch`: `touch planted` (") {
		t.Errorf("a denied program in the pod: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "planted")); err == nil {
		t.Error("the denied touch ran in the pod")
	}
	if got := callText(t, cs, "bash", map[string]any{"command": "read x; echo got $x; sleep 300", "description": "Wait", "run_in_background": true, "input": true}); !strings.HasPrefix(got, "started background task bash-1;") {
		t.Fatalf("background: %q", got)
	}
	if got := inputAnswer(t, cs, "bash-1", "hello\n", "got hello"); !strings.Contains(got, "got hello") {
		t.Errorf("bash_input: %q", got)
	}
	if got := callText(t, cs, "bash_tasks", nil); !strings.Contains(got, "bash-1") {
		t.Errorf("bash_tasks: %q", got)
	}
	if got := callText(t, cs, "bash_output", map[string]any{"task_id": "bash-1"}); !strings.Contains(got, "running") {
		t.Errorf("bash_output: %q", got)
	}
	if got := callText(t, cs, "bash_kill", map[string]any{"task_id": "bash-1"}); !strings.Contains(got, "bash-1") {
		t.Errorf("bash_kill: %q", got)
	}
	pods := k8stest.Client(t).Pods(ns)
	list, err := pods.List(context.Background(), metav1.ListOptions{LabelSelector: k8s.LabelManagedBy + "=dsh-bash"})
	if err != nil {
		t.Fatal(err)
	}
	if n := live(list.Items); n != 1 {
		t.Fatalf("pods during the session: %d, want 1", n)
	}
	cs.Close()
	list, err = pods.List(context.Background(), metav1.ListOptions{LabelSelector: k8s.LabelManagedBy + "=dsh-bash"})
	if err != nil {
		t.Fatal(err)
	}
	if n := live(list.Items); n != 0 {
		t.Errorf("pods after the session: %d, want 0", n)
	}
}

// live counts the pods not being deleted.
func live(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}
