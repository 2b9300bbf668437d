package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/remote"
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
	names     []string // the hosts' names, in order, once executor has made them
}

func (f *remoteFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.Var(&f.cmds, "executor-cmd", "run commands through dsh-bash executor on the far side of `CMD`'s stdio: 'ssh box dsh-bash executor', 'docker exec -i box dsh-bash executor', 'kubectl exec -i pod -- dsh-bash executor' (split like shell words; repeatable: a fleet)")
	fs.Var(&f.urls, "remote", "run commands on ssh://[user@]host[:port][/workspace] over built-in SSH (keys from the agent or ~/.ssh, host keys from ~/.ssh/known_hosts; host aliases of ~/.ssh/config with their HostName, User, Port, IdentityFile and UserKnownHostsFile; repeatable: a fleet)")
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
}

func (f *remoteFlags) active() bool { return len(f.cmds)+len(f.urls) > 0 }

// dialTimeout bounds the first connection to a single far side.
const dialTimeout = 30 * time.Second

// executor connects to the far side: one host, or a fleet of them.
func (f *remoteFlags) executor(ctx context.Context, stderr io.Writer) (bash.Executor, error) {
	hosts, err := f.hosts(stderr)
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		f.names = append(f.names, h.Options.Host)
	}
	if len(hosts) > 1 {
		return remote.NewFleet(hosts)
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return remote.Dial(ctx, hosts[0].Dial, &hosts[0].Options)
}

// hosts makes a host of every --executor-cmd and --remote.
func (f *remoteFlags) hosts(stderr io.Writer) ([]remote.Host, error) {
	var hosts []remote.Host
	for _, c := range f.cmds {
		argv, err := shell.Fields(c, func(string) string { return "" })
		if err != nil {
			return nil, usageErr(fmt.Errorf("--executor-cmd %q: %w", c, err))
		}
		if len(argv) == 0 {
			return nil, usageErr(errors.New("--executor-cmd: no command"))
		}
		cmd := &remote.Command{Argv: argv, Stderr: stderr}
		hosts = append(hosts, remote.Host{Dial: cmd.Dial, Options: remote.Options{Host: "`" + c + "`", Workspace: f.workspace}})
	}
	for _, u := range f.urls {
		d, ws, err := remote.ParseURL(u)
		if err != nil {
			return nil, usageErr(err)
		}
		// Aliases of ~/.ssh/config, as ssh reads them.
		if err := d.ApplyConfig(""); err != nil {
			return nil, usageErr(err)
		}
		d.Command, d.Upload, d.Stderr = f.command, f.upload, stderr
		if ws == "" {
			ws = f.workspace
		}
		hosts = append(hosts, remote.Host{Dial: d.Dial, Options: remote.Options{Host: d.Name(), Workspace: ws}})
	}
	return hosts, nil
}
