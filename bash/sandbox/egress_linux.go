package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// proxyListen is the agent's listener at ProxyAddr, in the jail's network
// namespace, which it hands to the host with its first message.
func proxyListen() (int, error) {
	fd, err := listenTCP(netip.MustParseAddrPort(ProxyAddr))
	if err != nil {
		return -1, fmt.Errorf("proxy listener: %w", err)
	}
	return fd, nil
}

// errNotListener: the agent's descriptor is not the listener it should be.
var errNotListener = errors.New("not a listening TCP socket")

// proxyListener takes the descriptor the agent sent as its proxy listener,
// once the host has checked that it is a listening IPv4 TCP socket (the
// agent runs beside the commands: what it sends is not trusted).
func proxyListener(fd int) (net.Listener, error) {
	if !listening(fd, unix.AF_INET) {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: the proxy listener is %w", errProtocol, errNotListener)
	}
	return fileListener(fd, "the proxy listener")
}

// listening reports whether fd is a listening TCP socket of family.
func listening(fd, family int) bool {
	for _, want := range []struct{ opt, val, or int }{
		{unix.SO_ACCEPTCONN, 1, 1}, {unix.SO_DOMAIN, family, family},
		{unix.SO_TYPE, unix.SOCK_STREAM, unix.SOCK_STREAM}, {unix.SO_PROTOCOL, unix.IPPROTO_TCP, unix.IPPROTO_MPTCP},
	} {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, want.opt)
		if err != nil || v != want.val && v != want.or {
			return false
		}
	}
	return true
}

// fileListener makes a net.Listener of fd, which it closes.
func fileListener(fd int, what string) (net.Listener, error) {
	f := os.NewFile(uintptr(fd), what)
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return l, nil
}

// serveProxy hands the jail's proxy listener to the egress proxy, for its
// owner's commands; closeProxy stops it.
func (j *jail) serveProxy(e Egress, l net.Listener) {
	j.proxyL = l
	j.proxyDone = make(chan struct{})
	go func() {
		defer close(j.proxyDone)
		_ = e.Serve(l, j.owner)
	}()
}

// closeProxy closes the jail's proxy and forward listeners and waits
// for Serve and Forward to return.
func (j *jail) closeProxy() {
	j.closeForwards()
	if j.proxyL == nil {
		return
	}
	j.proxyL.Close()
	<-j.proxyDone
}
