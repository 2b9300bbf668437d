//go:build linux

package remote

import (
	"context"
	"crypto/ed25519"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/dshgo/dsh/internal/testwait"
)

// sshd is an OpenSSH server the test started on a loopback port of its
// own, with its own host key and authorized key; no system configuration
// is read or changed.
type sshd struct {
	t          testing.TB
	dir        string
	port       int
	hostKey    ssh.Signer
	knownHosts string // a known_hosts file holding hostKey
	identity   string // a private key file that may log in
	cmd        *exec.Cmd
}

const sshdPath = "/usr/sbin/sshd"

// requireSSHD skips a test without sshd, except under CI, which installs
// it.
func requireSSHD(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil && os.Getenv("CI") != "true" {
		t.Skip("sshd is not installed (apt install openssh-server)")
	}
}

// startSSHD starts a server; it stops with the test.
func startSSHD(t testing.TB) *sshd {
	t.Helper()
	requireSSHD(t)
	s := &sshd{t: t, dir: t.TempDir()}
	s.hostKey = writeKey(t, filepath.Join(s.dir, "host_ed25519"))
	s.identity = filepath.Join(s.dir, "id_ed25519")
	client := writeKey(t, s.identity)
	os.WriteFile(filepath.Join(s.dir, "authorized_keys"), ssh.MarshalAuthorizedKey(client.PublicKey()), 0o600)
	s.knownHosts = filepath.Join(s.dir, "known_hosts")
	// freePort finds a port that was free: another test may take it
	// before sshd binds it. Then sshd tries another.
	for try := 0; ; try++ {
		s.port = freePort(t)
		line := knownhosts.Line([]string{fmt.Sprintf("[127.0.0.1]:%d", s.port)}, s.hostKey.PublicKey())
		os.WriteFile(s.knownHosts, []byte(line+"\n"), 0o600)
		err := s.launch()
		if err == nil {
			return s
		}
		if !strings.Contains(err.Error(), "Address already in use") || try == 2 {
			t.Fatal(err)
		}
	}
}

// start runs sshd again on its port and waits until it listens.
func (s *sshd) start() {
	if err := s.launch(); err != nil {
		s.t.Fatal(err)
	}
}

// launch runs sshd and waits until it listens (it says so on stderr), or
// says what it printed before it ended.
func (s *sshd) launch() error {
	t := s.t
	if os.Geteuid() == 0 {
		// Privilege separation needs this directory, which the Debian
		// package's service would make.
		os.MkdirAll("/run/sshd", 0o755)
	}
	cfg := filepath.Join(s.dir, "sshd_config")
	home := filepath.Join(s.dir, "home")
	os.Mkdir(home, 0o700)
	os.WriteFile(cfg, []byte(strings.Join([]string{
		fmt.Sprintf("Port %d", s.port),
		"ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(s.dir, "host_ed25519"),
		"AuthorizedKeysFile " + filepath.Join(s.dir, "authorized_keys"),
		"PidFile " + filepath.Join(s.dir, "sshd.pid"),
		"StrictModes no", "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password", "AllowTcpForwarding no", "X11Forwarding no",
		"PrintMotd no", "LogLevel INFO", "MaxSessions 1000",
		// The far side's shell reads no ~/.bashrc of the machine's user
		// (bash run by sshd does), and its programs skip the race
		// detector's pause at exit (sshd passes no environment on).
		fmt.Sprintf("SetEnv HOME=%s %q", home, "GORACE="+os.Getenv("GORACE")),
	}, "\n")+"\n"), 0o600)
	s.cmd = exec.Command(sshdPath, "-D", "-e", "-f", cfg)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	lines := testwait.NewLines(stderr) // read on, to its end: its stderr keeps flowing
	for {
		line, err := lines.Next(t, `line "Server listening on" from sshd`)
		if err != nil {
			cmd := s.cmd
			s.cmd = nil
			_ = cmd.Wait()
			return fmt.Errorf("sshd ended before listening: %v; %s", err, lines.Last())
		}
		if strings.Contains(line, "Server listening on") {
			return nil
		}
	}
}

// stop kills the server (its connections' processes go with their
// connections), within testwait.Limit.
func (s *sshd) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	cmd := s.cmd
	s.cmd = nil
	_ = testwait.Exit(s.t, cmd, "sshd, after SIGTERM,")
}

// dialer is an SSH dialer for this server that runs command there.
func (s *sshd) dialer(command string) *SSH {
	u, err := user.Current()
	if err != nil {
		s.t.Fatal(err)
	}
	return &SSH{User: u.Username, Host: "127.0.0.1", Port: s.port, KnownHosts: []string{s.knownHosts},
		IdentityFiles: []string{s.identity}, NoAgent: true, Command: command, Stderr: os.Stderr,
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

// writeKey makes an ed25519 key and writes its private half to path.
func writeKey(t testing.TB, path string) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

// freePort finds a loopback port nobody listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
