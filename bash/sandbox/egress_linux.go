package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// proxyListen is the agent's listener at ProxyAddr, in the jail's network
// namespace, which it hands to the host with its first message.
func proxyListen() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("proxy listener: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	sa := &unix.SockaddrInet4{Port: proxyPort, Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("proxy listener: bind %s: %w", ProxyAddr, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("proxy listener: %w", err)
	}
	return fd, nil
}

// proxyPort is ProxyAddr's port.
const proxyPort = 3128

// errNotListener: the agent's descriptor is not the listener it should be.
var errNotListener = errors.New("not a listening TCP socket")

// proxyListener takes the descriptor the agent sent as its proxy listener,
// once the host has checked that it is a listening IPv4 TCP socket (the
// agent runs beside the commands: what it sends is not trusted).
func proxyListener(fd int) (net.Listener, error) {
	f := os.NewFile(uintptr(fd), "dsh-proxy")
	defer f.Close()
	for _, want := range []struct{ opt, val, or int }{
		{unix.SO_ACCEPTCONN, 1, 1}, {unix.SO_DOMAIN, unix.AF_INET, unix.AF_INET},
		{unix.SO_TYPE, unix.SOCK_STREAM, unix.SOCK_STREAM}, {unix.SO_PROTOCOL, unix.IPPROTO_TCP, unix.IPPROTO_MPTCP},
	} {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, want.opt)
		if err != nil || v != want.val && v != want.or {
			return nil, fmt.Errorf("%w: the proxy listener is %w", errProtocol, errNotListener)
		}
	}
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("the proxy listener: %w", err)
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

// closeProxy closes the jail's proxy listener and waits for Serve to
// return.
func (j *jail) closeProxy() {
	if j.proxyL == nil {
		return
	}
	j.proxyL.Close()
	<-j.proxyDone
}
