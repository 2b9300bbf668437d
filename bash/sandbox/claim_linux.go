package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/dshgo/dsh/bash/local"
)

// A jail of the warm pool starts with nothing of any session's: in a
// jail, the host's root read-only with the policy's mounts that hold for
// every session (poolArgs), a private /tmp, no capability, the seccomp
// filter; its agent runs no shell, and no Landlock rule binds it yet (the
// rules name the workspace). When a session claims it,
// the host binds that session's workspace, git directories, read-only
// paths and spill directory into the jail's mount namespace (mountIn),
// and sends the agent the rest of its configuration, which it applies as
// a fresh agent does at its start (Landlock, the fence, the exec guard,
// the proxy's listeners) before it says it is ready. In the Landlock
// layer, the agent runs alone until the claim brings its rules, its
// temporary directory and its seccomp filter.

// poolTemplate is what the warm pool's jails are started for: the
// commands' environment (whose cache variables name writable paths) and
// whether the agent traces its shells (deny rules at exec: a jail's
// seccomp filter allows it then). sig sums up what a jail started for it
// has that a session's must have too: its command line, the environment,
// the filter; a pooled jail is claimed by a session whose template has
// the same.
type poolTemplate struct {
	env    []string
	traced bool
	sig    string
}

// template is the pool's template for a session of env and traced, as
// the host is now (poolArgs leaves out what does not exist).
func (js *jails) template(env []string, traced bool) poolTemplate {
	t := poolTemplate{env: env, traced: traced}
	parts := append([]string{}, env...)
	if js.layer == LayerJail {
		parts = append(append(parts, strconv.FormatBool(traced)), js.policy.poolArgs(js.poolPaths(env))...)
	}
	t.sig = strings.Join(parts, "\x00")
	return t
}

// poolPaths are a pooled jail's paths: no workspace, no spill directory.
func (js *jails) poolPaths(env []string) jailPaths {
	return jailPaths{tmpSize: js.limits.limits.Tmp, serverTemp: js.serverTemp, env: env, systemHidden: js.systemHidden}
}

// startIdle starts a jail for the warm pool and waits until its agent
// says it waits to be claimed.
func (js *jails) startIdle(ctx context.Context, t poolTemplate) (*jail, error) {
	j := newJail("", "")
	j.claimed, j.idle, j.sig = make(chan struct{}), make(chan struct{}), t.sig
	if err := js.launchIdle(ctx, j, t); err != nil {
		j.fail(err)
		_ = j.close()
		return nil, err
	}
	return j, nil
}

func (js *jails) launchIdle(ctx context.Context, j *jail, t poolTemplate) error {
	reading := false
	defer func() {
		if !reading {
			close(j.readDone)
		}
	}()
	inJail := js.layer == LayerJail
	files, err := js.jailFiles(t.traced, inJail) // the Landlock layer's filter comes with the claim
	if err != nil {
		return err
	}
	j.sock = files[0]
	js.networkOf(j)
	agent := agentConfig{Socket: fdAgentSock, Exe: fdAgentExe, Pooled: true}
	if inJail {
		jp := js.poolPaths(t.env)
		js.fenceOf(j, jp)
		args := append(js.policy.poolArgs(jp), "--", "/proc/self/fd/"+strconv.Itoa(fdAgentExe))
		j.cmd = &exec.Cmd{Path: js.bwrap, Args: append(append([]string{"bwrap"}, args...), agentArgs(agent)...), Env: t.env,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	} else {
		agent.Alone = true
		js.aloneCmd(j, agent, t.env)
	}
	if reading, err = js.launch(j, files); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, js.startTimeout,
		fmt.Errorf("a warm sandbox did not start within %v (%s: %s)", js.startTimeout, j.starter(), bwrapSaid(j)))
	defer cancel()
	return j.await(ctx, j.idle)
}

// claimJail binds the pooled jail j to req's session: the session's
// mounts in a jail, its agent's configuration, its spill directory, and
// in the Landlock layer its temporary directory; then waits until the
// agent is ready. On an error the caller closes j, which serves no one
// else.
func (js *jails) claimJail(ctx context.Context, j *jail, req *local.SpawnRequest) error {
	if err := j.cg.claimCPU(); err != nil {
		return err
	}
	spill, unpin, err := js.hold(req.Owner)
	if err != nil {
		return fmt.Errorf("keep the session's spill directory: %w", err)
	}
	j.unpin = unpin
	jp := jailPaths{workspace: req.Workspace, tmpSize: js.limits.limits.Tmp, spill: spill, serverTemp: js.serverTemp, env: req.Env, systemHidden: js.systemHidden,
		deny: req.ExecRules.Patterns()}
	j.deny = jp.deny
	var c agentConfig
	var fds []int
	if j.alone {
		if c, err = js.layerAgent(j, jp); err != nil {
			return err
		}
		f, err := js.filterFile(len(jp.deny) > 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fds = []int{int(f.Fd())}
	} else if c, err = js.bindSession(j, jp); err != nil {
		return err
	}
	close(j.claimed)
	if err := j.sendClaim(c, fds); err != nil {
		return fmt.Errorf("claim a warm sandbox: %w", err)
	}
	return js.awaitReady(ctx, j, fmt.Errorf("a warm sandbox was not ready within %v of its claim (%s: %s)", js.startTimeout, j.starter(), bwrapSaid(j)))
}

// bindSession makes a pooled jail's mounts of the session of jp (holding
// the placeholders of its git directories, as a jail's start does) and
// returns its agent's configuration.
func (js *jails) bindSession(j *jail, jp jailPaths) (agentConfig, error) {
	var err error
	j.git = &gitHolds{}
	ops := js.policy.sessionMounts(jp, func(gd string) {
		if err == nil {
			err = j.git.hold(jp.workspace, gd)
		}
	})
	if err != nil {
		return agentConfig{}, err
	}
	if err := mountIn(j.mntns, jp.workspace, ops); err != nil {
		return agentConfig{}, fmt.Errorf("bind the session into a warm sandbox: %w", err)
	}
	return js.jailAgent(j, jp), nil
}

// sendClaim sends a pooled jail's agent its claim.
func (j *jail) sendClaim(c agentConfig, fds []int) error {
	j.sendMu.RLock()
	defer j.sendMu.RUnlock()
	if j.sock == nil {
		return errJailGone
	}
	return sendMsg(int(j.sock.Fd()), c, fds)
}
