package k8s

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dshgo/dsh/bash/remote"
)

// Options configure New. Namespace and Template are required.
type Options struct {
	// Config is how to reach the API server (nil: LoadConfig("")).
	Config *rest.Config
	// Namespace is where the pods are made.
	Namespace string
	// Template is the pod each session gets (see LoadTemplate): its image,
	// resources, runtimeClassName, nodeSelector, tolerations,
	// securityContext and volumes as given. dsh-bash names the pod and
	// labels it (LabelManagedBy, LabelInstance, LabelSession), and where
	// the template says nothing it sets terminationGracePeriodSeconds 1,
	// restartPolicy Never, automountServiceAccountToken false (commands
	// get no API credentials), enableServiceLinks false, and, for a
	// container with neither command nor args, a command that waits (sh
	// must be in the image).
	Template *corev1.Pod
	// Container is the template's container that runs the executor (""
	// the first).
	Container string
	// Command is what runs in the container to serve the session (nil:
	// dsh-bash executor).
	Command []string
	// Upload, when Command runs dsh-bash and the image has none on its
	// PATH, copies this binary into each pod (under CacheDir, checked by
	// its SHA-256) over the exec stream and runs that; the image needs sh
	// and the same OS and architecture.
	Upload bool
	// Binary is the program Upload copies ("": the running binary, which
	// is dsh-bash, or a program that serves as it does).
	Binary string
	// CacheDir is where Upload puts the binary in the pod (a shell word;
	// default /tmp/dsh-bash).
	CacheDir string
	// Remote are the options of each session's executor. Its Host is set
	// to "pod NAMESPACE/NAME"; its Workspace defaults to the template's
	// AnnotationWorkspace.
	Remote remote.Options
	// MaxTasks bounds the background tasks running in all the sessions'
	// pods together (0: no bound but each pod's own).
	MaxTasks int
	// Warm is how many started pods to keep ready, so that a new session
	// waits for neither the scheduler nor the kubelet. Each serves one
	// session and is deleted after it.
	Warm int
	// StartTimeout bounds a pod's start, from its creation to its container
	// running (default 2 minutes); a pod that cannot start (no such image,
	// a bad template) fails sooner, with the reason.
	StartTimeout time.Duration
	// Instance is the LabelInstance value of this server's pods ("": made
	// up at random).
	Instance string
	// KeepOrphans leaves alone the pods of a server gone from this host
	// (by default New deletes them).
	KeepOrphans bool
	// Stderr receives the executors' stderr; nil discards it.
	Stderr io.Writer
	// Logf reports what happens outside any call (a warm pod that failed
	// to start, orphans deleted); nil discards it.
	Logf func(format string, args ...any)
}

// Executor is a bash.Executor that runs each session (owner token) in a
// pod of its own: made (or taken from the warm pods) on the session's
// first call, reached over the pod's exec stream, and deleted when the
// session ends (EndOwner) or the executor closes. See remote.Fleet for
// how the calls and task ids of the sessions are kept apart.
type Executor struct {
	*remote.Fleet
	opts   Options
	config *rest.Config
	client *coreClient
	pods   *pods
	pool   *pool
	owner  string            // AnnotationOwner of this process
	labels map[string]string // on every pod made
}

// LoadConfig loads how to reach the API server: the kubeconfig file given,
// else $KUBECONFIG's or ~/.kube/config (with their current context), else,
// inside a cluster, the pod's service account.
func LoadConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return cfg, nil
}

// New makes the executor, deletes the pods an earlier server on this host
// left (unless KeepOrphans), and starts filling the warm pods. No session
// pod is made before a session's first call.
func New(ctx context.Context, opts *Options) (*Executor, error) {
	e, err := newExecutor(opts)
	if err != nil {
		return nil, err
	}
	if !e.opts.KeepOrphans {
		if err := e.deleteOrphans(ctx); err != nil {
			return nil, err
		}
	}
	e.Fleet = remote.NewPerSession(e.open, &remote.SessionOptions{MaxTasks: e.opts.MaxTasks})
	e.pool = newPool(e, e.opts.Warm)
	e.pool.fill()
	return e, nil
}

// newExecutor checks the options and makes the client.
func newExecutor(opts *Options) (*Executor, error) {
	if opts == nil || opts.Namespace == "" || opts.Template == nil {
		return nil, errors.New("k8s: a namespace and a pod template are needed")
	}
	e := &Executor{opts: *opts}
	if err := checkTemplate(e.opts.Template, e.opts.Container); err != nil {
		return nil, fmt.Errorf("k8s: pod template: %w", err)
	}
	if e.opts.Config == nil {
		cfg, err := LoadConfig("")
		if err != nil {
			return nil, err
		}
		e.opts.Config = cfg
	}
	e.config = rest.CopyConfig(e.opts.Config)
	e.config.UserAgent = cmp.Or(e.config.UserAgent, "dsh-bash")
	client, err := newCoreClient(e.config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	e.client = client
	e.pods = &pods{client: client, ns: e.opts.Namespace, container: e.opts.Container, timeout: cmp.Or(e.opts.StartTimeout, 2*time.Minute)}
	if e.opts.Instance == "" {
		e.opts.Instance = randomName()
	}
	e.owner = ownerAnnotation()
	e.labels = map[string]string{LabelManagedBy: managedBy, LabelInstance: e.opts.Instance}
	if len(e.opts.Command) == 0 {
		e.opts.Command = []string{"dsh-bash", "executor"}
	}
	if e.opts.Remote.Workspace == "" {
		e.opts.Remote.Workspace = e.opts.Template.Annotations[AnnotationWorkspace]
	}
	return e, nil
}

// Namespace is where the executor's pods are.
func (e *Executor) Namespace() string { return e.opts.Namespace }

// Instance is the LabelInstance value of the executor's pods.
func (e *Executor) Instance() string { return e.opts.Instance }

// Close ends every session, deletes their pods and the warm ones.
func (e *Executor) Close() error {
	err := e.Fleet.Close()
	return errors.Join(err, e.pool.close())
}

// open is the Fleet's OpenFunc: a warm pod, else a new one.
func (e *Executor) open(ctx context.Context, owner string) (remote.Host, func(context.Context) error, error) {
	w := e.pool.claim(ctx, owner)
	if w == nil {
		var err error
		if w, err = e.start(ctx, sessionLabel(owner)); err != nil {
			return remote.Host{}, nil, err
		}
	}
	name := w.pod.Name
	release := func(ctx context.Context) error { return e.pods.delete(ctx, name) }
	return remote.Host{Dial: e.dialer(w), Options: e.hostOptions(name), Dialled: w.ex}, release, nil
}

// hostOptions are the options of the executor of pod name's session.
func (e *Executor) hostOptions(name string) remote.Options {
	opts := e.opts.Remote
	opts.Host = "pod " + e.opts.Namespace + "/" + name
	return opts
}

// ready is a pod whose container runs, with the command that serves a
// session there, and, for a warm pod, its executor dialled (the handshake
// done).
type ready struct {
	pod  *corev1.Pod
	argv []string
	ex   *remote.Executor
}

// start makes a pod labelled session, waits until it runs, and finds (or
// uploads) the executor there; a pod that fails is deleted.
func (e *Executor) start(ctx context.Context, session string) (*ready, error) {
	labels := map[string]string{LabelSession: session}
	for k, v := range e.labels {
		labels[k] = v
	}
	// Named here, not by the API server: a create whose reply is lost (ctx
	// ended, the connection cut) may have made the pod, which is then
	// deleted by name.
	name := "dsh-" + e.opts.Instance + "-" + randomName()
	deleteIt := func(err error) error {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return errors.Join(err, e.pods.delete(dctx, name))
	}
	p, err := e.pods.create(ctx, podFrom(e.opts.Template, e.opts.Container, name, labels, e.owner))
	if err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			return nil, deleteIt(err)
		}
		return nil, err
	}
	r, err := e.prepare(ctx, p)
	if err != nil {
		return nil, deleteIt(err)
	}
	return r, nil
}

// prepare waits for the pod to run and finds the command to serve in it.
func (e *Executor) prepare(ctx context.Context, p *corev1.Pod) (*ready, error) {
	p, err := e.pods.waitRunning(ctx, p)
	if err != nil {
		return nil, err
	}
	r := &ready{pod: p, argv: e.opts.Command}
	if !e.opts.Upload {
		return r, nil
	}
	x := e.exec(p.Name, nil)
	cmd, err := remote.Bootstrap(ctx, x.Run, "pod "+e.opts.Namespace+"/"+p.Name, cmp.Or(e.opts.CacheDir, "/tmp/dsh-bash"), e.opts.Binary, shellJoin(e.opts.Command))
	if err != nil {
		return nil, err
	}
	r.argv = []string{"sh", "-c", "exec " + cmd}
	return r, nil
}

// exec is the exec stream of argv in the pod.
func (e *Executor) exec(pod string, argv []string) *Exec {
	return &Exec{
		Config: e.config, Client: e.client.RESTClient(),
		Namespace: e.opts.Namespace, Pod: pod, Container: e.opts.Container,
		Command: argv, Stderr: e.opts.Stderr,
		Explain: func(err error) error { return e.pods.gone(pod, err) },
	}
}

// dialer dials the session's executor in the pod.
func (e *Executor) dialer(r *ready) remote.DialFunc {
	return e.exec(r.pod.Name, r.argv).Dial
}

// sessionLabel is the LabelSession value of owner's pod: a hash, as owner
// tokens may hold anything.
func sessionLabel(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:8])
}

// randomName is 8 random hex digits.
func randomName() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// shellJoin quotes argv as one POSIX shell command.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// Probe makes a session's pod (or takes a warm one), dials its executor,
// hands it to fn, then ends the session and deletes the pod: what
// dsh-bash doctor reports.
func (e *Executor) Probe(ctx context.Context, fn func(*remote.Executor) error) error {
	h, release, err := e.open(ctx, "probe "+randomName())
	if err != nil {
		return err
	}
	defer release(context.WithoutCancel(ctx))
	ex, err := remote.Dial(ctx, h.Dial, &h.Options)
	if err != nil {
		return err
	}
	defer ex.Close()
	return fn(ex)
}
