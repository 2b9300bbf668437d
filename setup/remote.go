package setup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/bash/remote/k8s"
)

// Remote are the far sides where commands run, where dsh-bash executor
// serves: a fleet when more than one.
type Remote struct {
	// ExecutorCmds are programs whose stdio is a stream ('ssh box
	// dsh-bash executor'), split like shell words.
	ExecutorCmds []string
	// Hosts are ssh://[user@]host[:port][/workspace] URLs, reached over
	// built-in SSH (aliases of ~/.ssh/config as ssh reads them).
	Hosts []string
	// Workspace is the sessions' directory on the far side, where a URL
	// names none ("": the directories given here, unchanged).
	Workspace string
	// Command is what runs on an SSH host ("": dsh-bash executor).
	Command string
	// Upload copies this binary to SSH hosts, or pods, without dsh-bash.
	Upload bool
	// K8s shapes the pods of a k8s://NAMESPACE[/workspace] URL in Hosts
	// (which must then be the only far side): a pod per session.
	K8s K8s
}

// K8s shapes the pods of a k8s:// remote.
type K8s struct {
	// Template is the pod template file (k8s.LoadTemplate); required.
	Template string
	// Warm is how many started pods to keep ready for new sessions.
	Warm int
	// StartTimeout bounds a pod's start (0: k8s.Options' default).
	StartTimeout time.Duration
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, ~/.kube/config,
	// else the cluster's own service account).
	Kubeconfig string
}

func (r *Remote) active() bool { return len(r.ExecutorCmds)+len(r.Hosts) > 0 }

// dialTimeout bounds the first connection to a single far side.
const dialTimeout = 30 * time.Second

// remoteExecutor connects to the far side: one host, or a fleet of them.
func (s *Setup) remoteExecutor(ctx context.Context, stderr io.Writer) (bash.Executor, error) {
	if s.cfg.Remote.isK8s() {
		return s.k8sExecutor(ctx, stderr)
	}
	hosts, err := s.cfg.Remote.hosts(stderr)
	if err != nil {
		return nil, err
	}
	deny := s.cfg.Permissions.DenyPatterns()
	for i := range hosts {
		s.hosts = append(s.hosts, hosts[i].Options.Host)
		hosts[i].Options.Deny = deny // the far side enforces them at exec
	}
	if len(hosts) > 1 {
		return remote.NewFleet(hosts)
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return remote.Dial(ctx, hosts[0].Dial, &hosts[0].Options)
}

// hosts makes a host of every executor command and SSH URL.
func (r *Remote) hosts(stderr io.Writer) ([]remote.Host, error) {
	var hosts []remote.Host
	for _, c := range r.ExecutorCmds {
		argv, err := shell.Fields(c, func(string) string { return "" })
		if err != nil {
			return nil, configErr(fmt.Errorf("--executor-cmd %q: %w", c, err))
		}
		if len(argv) == 0 {
			return nil, configErr(errors.New("--executor-cmd: no command"))
		}
		cmd := &remote.Command{Argv: argv, Stderr: stderr}
		hosts = append(hosts, remote.Host{Dial: cmd.Dial, Options: remote.Options{Host: "`" + c + "`", Workspace: r.Workspace}})
	}
	for _, u := range r.Hosts {
		if k8s.IsURL(u) {
			return nil, configErr(errors.New("a k8s:// remote is the only far side: it takes no other --remote or --executor-cmd"))
		}
		d, ws, err := remote.ParseURL(u)
		if err != nil {
			return nil, configErr(err)
		}
		if err := d.ApplyConfig(""); err != nil {
			return nil, configErr(err)
		}
		d.Command, d.Upload, d.Stderr = cmp.Or(r.Command, "dsh-bash executor"), r.Upload, stderr
		hosts = append(hosts, remote.Host{Dial: d.Dial, Options: remote.Options{Host: d.Name(), Workspace: cmp.Or(ws, r.Workspace)}})
	}
	return hosts, nil
}

// isK8s reports whether the far side is Kubernetes: a k8s:// URL alone.
func (r *Remote) isK8s() bool {
	return len(r.Hosts) == 1 && len(r.ExecutorCmds) == 0 && k8s.IsURL(r.Hosts[0])
}

// k8sExecutor makes the executor of a pod per session.
func (s *Setup) k8sExecutor(ctx context.Context, stderr io.Writer) (bash.Executor, error) {
	r := &s.cfg.Remote
	ns, ws, err := k8s.ParseURL(r.Hosts[0])
	if err != nil {
		return nil, configErr(err)
	}
	if r.K8s.Template == "" {
		return nil, configErr(errors.New("a k8s:// remote needs a pod template: --k8s-template FILE (see docs/kubernetes.md)"))
	}
	tmpl, err := k8s.LoadTemplate(r.K8s.Template)
	if err != nil {
		return nil, configErr(err)
	}
	var command []string
	if r.Command != "" {
		if command, err = shell.Fields(r.Command, func(string) string { return "" }); err != nil {
			return nil, configErr(fmt.Errorf("--remote-command %q: %w", r.Command, err))
		}
	}
	cfg, err := k8s.LoadConfig(r.K8s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	opts := &k8s.Options{
		Config: cfg, Namespace: ns, Template: tmpl, Command: command, Upload: r.Upload,
		Remote: remote.Options{Workspace: cmp.Or(ws, r.Workspace), Deny: s.cfg.Permissions.DenyPatterns()},
		Warm:   r.K8s.Warm, StartTimeout: r.K8s.StartTimeout, Stderr: stderr,
		Logf: func(format string, a ...any) {
			fmt.Fprintf(cmp.Or[io.Writer](stderr, io.Discard), "dsh-bash: kubernetes: "+format+"\n", a...)
		},
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	e, err := k8s.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.hosts = append(s.hosts, "k8s://"+ns)
	return e, nil
}
