//go:build linux

package sshdtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/dshgo/dsh/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// login logs in to s as its User with its Identity, checking its host key
// against its KnownHosts.
func login(t *testing.T, s *Server) (*ssh.Client, error) {
	t.Helper()
	key, err := os.ReadFile(s.Identity)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	check, err := knownhosts.New(s.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	return testwait.Reply("a login to sshd", func(ctx context.Context) (*ssh.Client, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", s.Port))
		if err != nil {
			return nil, err
		}
		if dl, ok := ctx.Deadline(); ok {
			conn.SetDeadline(dl)
		}
		c, chans, reqs, err := ssh.NewClientConn(conn, conn.RemoteAddr().String(), &ssh.ClientConfig{
			User: s.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: check,
			Timeout: time.Minute,
		})
		if err != nil {
			conn.Close()
			return nil, err
		}
		conn.SetDeadline(time.Time{})
		return ssh.NewClient(c, chans, reqs), nil
	})
}

// echo runs echo over a new login to s.
func echo(t *testing.T, s *Server) (string, error) {
	t.Helper()
	c, err := login(t, s)
	if err != nil {
		return "", err
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	out, err := sess.Output("echo $HOME up")
	return string(out), err
}

// TestServer: a login with the server's files runs a command; after Kill
// nothing listens; after Restart, on the same port and key, logins work
// again; Stop is quiet on a stopped server.
func TestServer(t *testing.T) {
	s := Start(t)
	if s.Pid() == 0 {
		t.Fatal("no pid after Start")
	}
	out, err := echo(t, s)
	if err != nil || out != s.Dir+"/home up\n" {
		t.Fatalf("echo over ssh: %q, %v; want %q", out, err, s.Dir+"/home up\n")
	}
	s.Kill()
	if s.Pid() != 0 {
		t.Error("a pid after Kill")
	}
	if _, err := echo(t, s); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a login after Kill: %v, want the connection refused", err)
	}
	s.Restart()
	if out, err := echo(t, s); err != nil || !strings.HasSuffix(out, " up\n") {
		t.Errorf("a login after Restart: %q, %v", out, err)
	}
	s.Stop()
	s.Stop()
}
