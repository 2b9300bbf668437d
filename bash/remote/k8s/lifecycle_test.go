//go:build linux

package k8s

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/k8stest"
	"github.com/dshgo/dsh/internal/servetest"
	"github.com/dshgo/dsh/internal/testwait"
)

// holdEnv, set, makes the test binary a server that opens a session's pod,
// prints its name and waits to be killed (TestOrphansDeleted).
const holdEnv = "DSH_K8S_TEST_HOLD"

type holdConfig struct {
	Namespace, Instance string
	Cwd, SpillDir       string
}

// hold is the held server's main.
func hold(cfg string) int {
	var c holdConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tmpl := heldTemplate()
	argv := []string{os.Args[0], "executor", servetestConfig(c.Cwd, c.SpillDir)}
	e, err := New(context.Background(), &Options{Namespace: c.Namespace, Template: tmpl, Command: argv, Instance: c.Instance, KeepOrphans: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := run(e, "held", "true"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin) // until killed, or its test is gone
	return 0
}

// TestOrphansDeleted: a server SIGKILLed leaves its session's pod; the
// next server to start on this host deletes it, and leaves the pods of a
// server still running alone.
func TestOrphansDeleted(t *testing.T) {
	t.Parallel()
	k := ownCluster(t) // where no other test's start deletes the orphan first
	alive := k.executor(t, bashtest.Config{Cwd: t.TempDir()}, nil)
	defer alive.Close()
	if _, err := run(alive, "alive", "true"); err != nil {
		t.Fatal(err)
	}
	cmd, h := startHeld(t, k, os.Args[0], "-test.run=^$")
	held := &Executor{client: alive.client, opts: Options{Namespace: k.ns, Instance: h.Instance}}
	name := podOf(t, held, "held")
	cmd.Process.Kill()
	cmd.Wait()
	if gone(t, alive, name) {
		t.Fatal("the killed server's pod went without a new server")
	}
	next := k.executor(t, bashtest.Config{}, nil)
	defer next.Close()
	if !gone(t, next, name) {
		t.Errorf("pod %s of the killed server is still there after the next start", name)
	}
	if gone(t, next, podOf(t, alive, "alive")) {
		t.Error("the next start deleted the pod of a server still running")
	}
}

// startHeld starts argv, which runs this test binary as a held server
// (hold) in k's namespace, and waits until its session's pod serves. The
// caller kills it; its stdin, open until the test ends, keeps it there.
func startHeld(t *testing.T, k cluster, argv ...string) (*exec.Cmd, holdConfig) {
	t.Helper()
	h := holdConfig{Namespace: k.ns, Instance: randomName(), Cwd: t.TempDir(), SpillDir: t.TempDir()}
	cfg, _ := json.Marshal(h)
	cmd := exec.Command(argv[0], argv[1:]...)
	// The held server finds the cluster as dsh-bash does, by $KUBECONFIG.
	cmd.Env = append(os.Environ(), holdEnv+"="+string(cfg), heldTemplateEnv+"="+templateJSON(t), "KUBECONFIG="+k8stest.Kubeconfig(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := testwait.ReplyWithin(k8stest.StartLimit, "the held server's pod", func(ctx context.Context) (string, error) {
		return bufio.NewReader(out).ReadString('\n')
	})
	if err != nil || strings.TrimSpace(line) != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("held server: %q %v", line, err)
	}
	return cmd, h
}

// TestUpload: with Upload, an image without dsh-bash gets the binary
// Options.Binary names (the running binary by default), copied over the
// exec stream into the cache directory. (Its reuse from
// the cache, which a pod's own file system rarely keeps, is
// bash/remote's TestUpload's: the same Bootstrap, over SSH.)
func TestUpload(t *testing.T) {
	t.Parallel()
	k := newCluster(t)
	cache := filepath.Join(t.TempDir(), "cache") // the pod has the host's /tmp
	c := bashtest.Config{Cwd: t.TempDir()}
	argv := serveArgv(t, c)
	// The far side, plain-built, is the binary uploaded: a quarter of the
	// race-built test binary's size, through the API server's stream.
	e := k.executor(t, c, func(o *Options) {
		o.Upload, o.CacheDir, o.Binary = true, cache, argv[0]
		o.Command = append([]string{"dsh-bash"}, argv[1:]...)
	})
	defer e.Close()
	if res, err := run(e, "a", "echo ok"); err != nil || res.Stdout.Text != "ok\n" {
		t.Fatalf("run: %v %+v", err, res)
	}
	sum, err := fileSum(argv[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cache, sum, "dsh-bash")); err != nil {
		t.Errorf("the uploaded binary: %v", err)
	}
}

// heldTemplateEnv carries the test pods' template to the held server.
const heldTemplateEnv = "DSH_K8S_TEST_TEMPLATE"

func templateJSON(t *testing.T) string {
	b, err := json.Marshal(template(t))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func heldTemplate() *corev1.Pod {
	var p corev1.Pod
	if err := json.Unmarshal([]byte(os.Getenv(heldTemplateEnv)), &p); err != nil {
		panic(err)
	}
	return &p
}

func servetestConfig(cwd, spill string) string {
	return servetest.Config{Config: bashtest.Config{Cwd: cwd}, SpillDir: spill}.Encode()
}

// fileSum is the SHA-256 of the file at path.
func fileSum(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// TestOrphansOtherPIDNamespace: a server in another pid namespace of this
// host (a container sharing its hostname) is not judged by pids it cannot
// see: the next start here leaves its pods alone.
func TestOrphansOtherPIDNamespace(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("unshare --pid needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip(err)
	}
	k := newCluster(t)
	cmd, h := startHeld(t, k, unshare, "--pid", "--fork", "--mount-proc", "--kill-child", os.Args[0], "-test.run=^$")
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	next := k.executor(t, bashtest.Config{}, nil)
	defer next.Close()
	held := &Executor{client: next.client, opts: Options{Namespace: k.ns, Instance: h.Instance}}
	name := podOf(t, held, "held")
	if gone(t, next, name) {
		t.Errorf("the next start deleted pod %s of a server running in another pid namespace", name)
	}
}
