//go:build linux

package remote

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/dshgo/dsh/internal/sshdtest"
	"github.com/dshgo/dsh/internal/testwait"
)

// sshd is an OpenSSH server the test started on loopback (see
// internal/sshdtest), with the dialers of this package for it.
type sshd struct {
	*sshdtest.Server
	t testing.TB
}

// startSSHD starts a server; it stops with the test.
func startSSHD(t testing.TB) *sshd {
	t.Helper()
	return &sshd{Server: sshdtest.Start(t), t: t}
}

// dialer is an SSH dialer for this server that runs command there.
func (s *sshd) dialer(command string) *SSH {
	return &SSH{User: s.User, Host: "127.0.0.1", Port: s.Port, KnownHosts: []string{s.KnownHosts},
		IdentityFiles: []string{s.Identity}, NoAgent: true, Command: command, Stderr: os.Stderr,
		WaitDelay: 5 * time.Second}
}

// connect opens one connection to the server for many streams (SSH.Client);
// it is closed with the test.
func (s *sshd) connect(t testing.TB) *ssh.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	c, err := s.dialer("").connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
