package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/dshgo/dsh/bash/local"
	"golang.org/x/sys/unix"
)

// The host's side of the agent's protocol. The agent runs in the jail,
// beside the commands it starts: the host trusts none of its messages to be
// well formed. Anything it did not ask for, or not in that order, ends that
// jail (its commands die with it) and never another, nor the server.

// errProtocol: the agent said something the host did not expect.
var errProtocol = errors.New("the sandbox agent broke the protocol")

// read dispatches the agent's messages until the connection ends or the
// agent breaks the protocol.
func (j *jail) read() {
	defer close(j.readDone)
	buf := make([]byte, 64<<10)
	fd := int(j.sock.Fd())
	for {
		var m agentMsg
		fds, err := recvMsg(fd, buf, &m)
		if err == nil {
			err = j.dispatch(m, fds)
		}
		if err != nil {
			if errors.Is(err, errProtocol) {
				// The agent stops hearing from us too, and exits.
				_ = unix.Shutdown(fd, unix.SHUT_RDWR)
			}
			j.fail(err)
			return
		}
	}
}

// dispatch hands one message to whoever waits for it; it never blocks, and
// it owns (closes or hands on) the descriptors.
func (j *jail) dispatch(m agentMsg, fds []int) error {
	if m.ID == 0 && m.Idle {
		return j.idleMsg(fds)
	}
	if m.ID == 0 {
		return j.readyMsg(m, fds)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	w := j.waiters[m.ID]
	switch {
	case w == nil:
		closeFDs(fds)
		return fmt.Errorf("%w: a message about shell %d, which it was not asked to start or has ended", errProtocol, m.ID)
	case (m.Exited || m.Refused != nil) && !w.answered:
		closeFDs(fds)
		return fmt.Errorf("%w: shell %d ended or ran something before it started", errProtocol, m.ID)
	case m.Refused != nil:
		closeFDs(fds)
		w.refused.Add(*m.Refused)
		return nil
	case m.Exited:
		closeFDs(fds)
		delete(j.waiters, m.ID)
		st := local.ExitStatus{Code: m.Code, Signal: syscall.Signal(m.Signal)}
		st.Refused, st.RefusedMore = w.refused.List()
		w.exited <- st // buffered, sent once
		return nil
	case w.answered:
		closeFDs(fds)
		return fmt.Errorf("%w: shell %d started twice", errProtocol, m.ID)
	}
	return j.startedMsg(w, m, fds)
}

// readyMsg takes the agent's first message, which says it is ready, with
// the proxy listener and the forwards' where the jail has them (j.egress),
// then the fence's descriptors where it is fenced (j.fenced), unless the
// kernel cannot supervise it (FenceErr), then the forker's clone3
// listener where the host wants one (j.clone3Wanted), unless the kernel
// cannot supervise it (UsernsErr).
func (j *jail) readyMsg(m agentMsg, fds []int) error {
	select {
	case <-j.ready:
		closeFDs(fds)
		return fmt.Errorf("%w: it said it was ready twice", errProtocol)
	default:
	}
	if j.claimed != nil {
		select {
		case <-j.claimed:
		default:
			closeFDs(fds)
			return fmt.Errorf("%w: it said it was ready before a session claimed it", errProtocol)
		}
	}
	listeners, fence := 0, 0
	if j.egress != nil {
		listeners = 1 + len(j.forwards) - len(m.Skipped)
	}
	if m.Fence {
		fence = 2
	}
	if err := j.checkReady(m, len(fds), listeners+fence+btoi(m.Clone3)); err != nil {
		closeFDs(fds)
		return err
	}
	if m.Clone3 {
		g, err := newClone3Guard(fds[len(fds)-1], m.Forker, j.agentProcess())
		if err != nil {
			closeFDs(fds[:len(fds)-1])
			return err
		}
		j.clone3 = g
		fds = fds[:len(fds)-1]
	}
	if fence == 2 {
		f, err := newFence(fds[listeners], fds[listeners+1], j.private)
		if err != nil {
			closeFDs(fds[:listeners])
			return err
		}
		j.fence = f
	}
	j.fenceErr, j.usernsErr = m.FenceErr, m.UsernsErr
	if j.egress != nil {
		if err := j.serveListeners(fds[:listeners], m.Skipped); err != nil {
			return err
		}
	}
	close(j.ready)
	return nil
}

// agentProcess is the process the host started for the jail (a
// Landlock-layer agent itself), nil before it started.
func (j *jail) agentProcess() *os.Process {
	if j.cmd == nil {
		return nil
	}
	return j.cmd.Process
}

// checkReady checks the agent's ready message, which came with n
// descriptors where want were due.
func (j *jail) checkReady(m agentMsg, n, want int) error {
	switch {
	case !m.Started || m.Exited || m.Err != "":
		return fmt.Errorf("%w: its first message was not that it is ready", errProtocol)
	case m.Fence && !j.fenced || j.fenced && !m.Fence && m.FenceErr == "":
		return fmt.Errorf("%w: its fence is not the one it was asked for", errProtocol)
	case m.Clone3 && (!j.clone3Wanted || m.UsernsErr != "") || j.clone3Wanted && !m.Clone3 && m.UsernsErr == "":
		return fmt.Errorf("%w: its clone3 guard is not the one it was asked for", errProtocol)
	case n != want:
		return fmt.Errorf("%w: it said it was ready with %d descriptors, not %d", errProtocol, n, want)
	}
	return j.checkSkipped(m.Skipped)
}

// idleMsg takes the first message of a pooled jail's agent, which waits
// to be claimed: a jail's comes with the jail's mount namespace, checked
// to be one, and not the host's own (the host enters it at the claim).
func (j *jail) idleMsg(fds []int) error {
	want := btoi(!j.alone)
	switch {
	case j.idle == nil:
		closeFDs(fds)
		return fmt.Errorf("%w: it said it was idle, in no pooled jail", errProtocol)
	case isClosed(j.idle):
		closeFDs(fds)
		return fmt.Errorf("%w: it said it was idle twice", errProtocol)
	case len(fds) != want:
		closeFDs(fds)
		return fmt.Errorf("%w: it said it was idle with %d descriptors, not %d", errProtocol, len(fds), want)
	}
	if want == 1 {
		if err := checkMountNS(fds[0]); err != nil {
			unix.Close(fds[0])
			return err
		}
		j.mntns = fds[0]
	}
	close(j.idle)
	return nil
}

// errNotMountNS: the agent's descriptor is not a mount namespace of its
// own.
var errNotMountNS = errors.New("not the jail's mount namespace")

// checkMountNS checks that fd is a mount namespace other than the
// host's.
func checkMountNS(fd int) error {
	typ, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	if err != nil || typ != unix.CLONE_NEWNS {
		return fmt.Errorf("%w: %w", errProtocol, errNotMountNS)
	}
	var ns, own unix.Stat_t
	if unix.Fstat(fd, &ns) != nil || unix.Stat("/proc/thread-self/ns/mnt", &own) != nil || ns.Ino == own.Ino && ns.Dev == own.Dev {
		return fmt.Errorf("%w: %w", errProtocol, errNotMountNS)
	}
	return nil
}

// isClosed reports whether c is closed.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// startedMsg answers a spawn: an error, or a start with the shell's pidfd.
// Under j.mu.
func (j *jail) startedMsg(w *waiter, m agentMsg, fds []int) error {
	w.pidfd = -1
	switch {
	case m.Err != "":
		closeFDs(fds)
		delete(j.waiters, m.ID) // nothing started: no end will come
	case !m.Started || len(fds) != 1:
		closeFDs(fds)
		return fmt.Errorf("%w: the answer for shell %d holds %d descriptors", errProtocol, m.ID, len(fds))
	default:
		w.pidfd = fds[0]
	}
	w.answered = true
	w.started <- m // buffered, sent once
	return nil
}
