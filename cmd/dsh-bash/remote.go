package main

import (
	"flag"
	"slices"

	"github.com/dshgo/dsh/bash/remote/k8s"
	"github.com/dshgo/dsh/setup"
)

// remoteFlags choose a remote executor, or a fleet of them: commands run
// on the far side of streams, where dsh-bash executor serves.
type remoteFlags struct {
	fs        *flag.FlagSet
	cmds      listFlag // programs whose stdio is a stream
	urls      listFlag // ssh:// hosts
	workspace string   // the sessions' directory on the far side
	command   string   // what runs on an SSH host
	upload    bool
	k8s       setup.K8s // a k8s:// remote's pods
}

func (f *remoteFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.Var(&f.cmds, "executor-cmd", "run commands through dsh-bash executor on the far side of `CMD`'s stdio: 'ssh box dsh-bash executor', 'docker exec -i box dsh-bash executor', 'kubectl exec -i pod -- dsh-bash executor' (split like shell words; repeatable: a fleet)")
	fs.Var(&f.urls, "remote", "run commands on ssh://[user@]host[:port][/workspace] over built-in SSH (keys from the agent or ~/.ssh, host keys from ~/.ssh/known_hosts; host aliases of ~/.ssh/config with their HostName, User, Port, IdentityFile and UserKnownHostsFile; repeatable: a fleet), or in a Kubernetes pod per session with k8s://NAMESPACE[/workspace] (with --k8s-template)")
	fs.StringVar(&f.k8s.Template, "k8s-template", "", "the pod template (a Pod manifest, YAML or JSON) of each session's pod, for --remote k8s://NAMESPACE")
	fs.IntVar(&f.k8s.Warm, "k8s-warm", 0, "keep `N` started pods ready, so that a new session waits for no pod to start (each serves one session and is deleted after it)")
	fs.StringVar(&f.k8s.Kubeconfig, "kubeconfig", "", "the kubeconfig file of a k8s:// remote (default: $KUBECONFIG, ~/.kube/config, else the cluster's own service account)")
	fs.StringVar(&f.workspace, "remote-workspace", "", "the sessions' directory on the far side, where a --remote URL names none (default: the directories given here, unchanged)")
	fs.StringVar(&f.command, "remote-command", "dsh-bash executor", "what --remote runs on its hosts, e.g. '/opt/dsh/dsh-bash executor --sandbox=on'")
	fs.BoolVar(&f.upload, "remote-upload", false, "where a --remote host has no dsh-bash, copy this binary there (~/.cache/dsh-bash/SHA256/, same OS and architecture) and run it")
}

// merge completes the parsed flags with the configuration file: its hosts
// come before the flags'; a flag given wins over its other fields.
func (f *remoteFlags) merge(c *remoteConfig) {
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	f.urls = append(slices.Clip(c.Hosts), f.urls...)
	f.cmds = append(slices.Clip(c.ExecutorCmds), f.cmds...)
	if !given["remote-workspace"] && c.Workspace != "" {
		f.workspace = c.Workspace
	}
	if !given["remote-command"] && c.Command != "" {
		f.command = c.Command
	}
	f.upload = f.upload || c.Upload
	if !given["k8s-template"] && c.K8s.Template != "" {
		f.k8s.Template = c.K8s.Template
	}
	if !given["k8s-warm"] && c.K8s.Warm != 0 {
		f.k8s.Warm = c.K8s.Warm
	}
	if !given["kubeconfig"] && c.K8s.Kubeconfig != "" {
		f.k8s.Kubeconfig = c.K8s.Kubeconfig
	}
}

// isK8s reports whether a k8s:// URL is among the hosts.
func (f *remoteFlags) isK8s() bool { return slices.ContainsFunc(f.urls, k8s.IsURL) }

func (f *remoteFlags) active() bool { return len(f.cmds)+len(f.urls) > 0 }

// config is the far sides' configuration the flags give.
func (f *remoteFlags) config() setup.Remote {
	return setup.Remote{ExecutorCmds: f.cmds, Hosts: f.urls, Workspace: f.workspace, Command: f.command, Upload: f.upload, K8s: f.k8s}
}
