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
	// Upload copies this binary to SSH hosts without dsh-bash.
	Upload bool
}

func (r *Remote) active() bool { return len(r.ExecutorCmds)+len(r.Hosts) > 0 }

// dialTimeout bounds the first connection to a single far side.
const dialTimeout = 30 * time.Second

// remoteExecutor connects to the far side: one host, or a fleet of them.
func (s *Setup) remoteExecutor(ctx context.Context, stderr io.Writer) (bash.Executor, error) {
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
