package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// agentForward is a Forward as the agent is told it: where to listen.
type agentForward struct {
	Listen   netip.AddrPort `json:"listen"`
	Optional bool           `json:"optional,omitempty"`
}

func agentForwards(fs []Forward) []agentForward {
	out := make([]agentForward, len(fs))
	for i, f := range fs {
		out[i] = agentForward{Listen: f.Listen, Optional: f.Optional}
	}
	return out
}

// listeners are the agent's listeners, for its first message: the
// proxy's (c.Proxy), then the forwards' (see forwardListeners).
func listeners(c agentConfig) (fds, skipped []int, err error) {
	if !c.Proxy {
		return nil, nil, nil
	}
	l, err := proxyListen()
	if err != nil {
		return nil, nil, err
	}
	fds, skipped, err = forwardListeners(c.Forward)
	if err != nil {
		unix.Close(l)
		return nil, nil, err
	}
	return append([]int{l}, fds...), skipped, nil
}

// forwardListeners listen at each forward's address, in order, but for
// the optional ones the jail has no such address for (skipped: their
// indexes).
func forwardListeners(fs []agentForward) (fds, skipped []int, err error) {
	for i, f := range fs {
		fd, err := listenTCP(f.Listen)
		switch {
		case err != nil && f.Optional && (errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EAFNOSUPPORT)):
			skipped = append(skipped, i)
		case err != nil:
			closeFDs(fds)
			return nil, nil, fmt.Errorf("forward listener: %w", err)
		default:
			fds = append(fds, fd)
		}
	}
	return fds, skipped, nil
}

// listenTCP is a listening TCP socket at ap.
func listenTCP(ap netip.AddrPort) (int, error) {
	family, sa := unix.AF_INET6, unix.Sockaddr(&unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()})
	if ap.Addr().Is4() {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("listen at %s: %w", ap, err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind %s: %w", ap, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen at %s: %w", ap, err)
	}
	return fd, nil
}

// forwarded are a jail's forward listeners, served by its Forwarder.
type forwarded struct {
	ls   []net.Listener
	done sync.WaitGroup
}

// checkSkipped refuses what the agent went without, unless each is an
// optional forward, named once, in order.
func (j *jail) checkSkipped(skipped []int) error {
	for k, i := range skipped {
		if i < 0 || i >= len(j.forwards) || !j.forwards[i].Optional || k > 0 && i <= skipped[k-1] {
			return fmt.Errorf("%w: it went without forward listener %d", errProtocol, i)
		}
	}
	return nil
}

// serveListeners takes the descriptors the agent sent with its first
// message (the proxy's listener, then the forwards' but the skipped
// ones), once each is the listener it should be, and serves them: the
// proxy's with Options.Egress, each forward's with its Forwarder.
func (j *jail) serveListeners(fds, skipped []int) error {
	proxy, err := proxyListener(fds[0])
	if err != nil {
		closeFDs(fds[1:])
		return err
	}
	var fs []Forward
	var ls []net.Listener
	rest := fds[1:]
	for i, f := range j.forwards {
		if slices.Contains(skipped, i) {
			continue
		}
		l, err := forwardListener(rest[0], f.Listen)
		rest = rest[1:]
		if err != nil {
			closeFDs(rest)
			proxy.Close()
			closeListeners(ls)
			return err
		}
		fs, ls = append(fs, f), append(ls, l)
	}
	j.serveProxy(j.egress, proxy)
	j.serveForwards(fs, ls)
	return nil
}

// forwardListener takes a descriptor the agent sent as the listener of
// the forward at want, once the host has checked that it is a listening
// TCP socket bound there.
func forwardListener(fd int, want netip.AddrPort) (net.Listener, error) {
	bad := fmt.Errorf("%w: the listener of the forward to %s is %w", errProtocol, want, errNotListener)
	family := unix.AF_INET
	if want.Addr().Is6() {
		family = unix.AF_INET6
	}
	if !listening(fd, family) {
		unix.Close(fd)
		return nil, bad
	}
	sa, err := unix.Getsockname(fd)
	var at netip.AddrPort
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		at = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		at = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	if err != nil || at != want {
		unix.Close(fd)
		return nil, bad
	}
	return fileListener(fd, "the forward listener")
}

// serveForwards hands each forward's listener to the Forwarder.
func (j *jail) serveForwards(fs []Forward, ls []net.Listener) {
	if len(ls) == 0 {
		return
	}
	fw := j.egress.(Forwarder) // New checked it
	j.fwd.ls = ls
	for i, l := range ls {
		j.fwd.done.Go(func() { _ = fw.Forward(l, j.owner, fs[i].To) })
	}
}

// closeForwards closes the forwards' listeners and waits for the
// Forwarder to return.
func (j *jail) closeForwards() {
	closeListeners(j.fwd.ls)
	j.fwd.done.Wait()
}

func closeListeners(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}
