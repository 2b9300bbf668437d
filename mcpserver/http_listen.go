package mcpserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Listen opens the listener of a streamable HTTP server. addr is HOST:PORT
// on TCP, where a host other than loopback is refused with noAuth (see
// ListenAddr), or unix:PATH (see ListenUnix), which is private to this
// user, so noAuth is allowed there.
func Listen(addr string, noAuth bool) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return ListenUnix(path)
	}
	hostPort, err := ListenAddr(addr, !noAuth)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", hostPort)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", hostPort, err)
	}
	return ln, nil
}

// ListenUnix listens on a unix socket at path that only this user (and
// root) can connect to: mode 0600, never wider, not even for an instant.
// The socket is made in a new private (0700) directory beside path,
// chmodded there, then hard-linked to path, which fails rather than
// replace anything that appears there meanwhile; so the umask does not
// matter and no other user can reach it before it is 0600. A stale socket
// at path (nothing accepts on it) is removed first; anything else there is
// refused. Closing the listener removes path, if it is still this socket.
func ListenUnix(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("unix: needs a socket path (unix:PATH)")
	}
	path = filepath.Clean(path)
	if err := removeStale(path); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".dsh-bash-")
	if err != nil {
		return nil, fmt.Errorf("make a private directory beside %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // it is moved to path, and path is removed
	fi, err := placeSocket(tmp, path)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &unixListener{UnixListener: ln, path: path, fi: fi}, nil
}

// placeSocket makes the socket at tmp 0600 and links it to path.
func placeSocket(tmp, path string) (os.FileInfo, error) {
	if err := os.Chmod(tmp, 0o600); err != nil {
		return nil, fmt.Errorf("chmod the socket: %w", err)
	}
	if err := os.Link(tmp, path); err != nil {
		return nil, fmt.Errorf("put the socket at %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("the socket at %s: %w", path, err)
	}
	return fi, nil
}

// staleProbe bounds the connection attempt that tells a live socket from a
// stale one.
const staleProbe = time.Second

// removeStale removes a socket at path that nothing accepts on, and refuses
// anything else that exists there.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("refusing to serve on unix:%s: it exists and is not a socket (%s)", path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, staleProbe)
	if err == nil {
		c.Close()
		return fmt.Errorf("refusing to serve on unix:%s: a server is listening on it", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("refusing to serve on unix:%s: it exists and cannot be checked: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove the stale socket %s: %w", path, err)
	}
	return nil
}

// unixListener removes its socket file when closed.
type unixListener struct {
	*net.UnixListener
	path string
	fi   os.FileInfo
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if fi, lerr := os.Lstat(l.path); lerr == nil && os.SameFile(fi, l.fi) {
		if rerr := os.Remove(l.path); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// Addr is the socket's path.
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }
