//go:build linux

package sshdtest

import (
	"crypto/ed25519"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/dshgo/dsh/internal/testwait"
)

// Path is the sshd binary a Server runs.
const Path = "/usr/sbin/sshd"

// Server is an sshd a test started. Log in as User to 127.0.0.1:Port with
// the key in Identity, checking the host's key against KnownHosts.
type Server struct {
	Dir        string     // the server's files: keys, configuration, a HOME
	Port       int        // on 127.0.0.1
	HostKey    ssh.Signer // the server's key
	KnownHosts string     // a known_hosts file holding HostKey for [127.0.0.1]:Port
	Identity   string     // a private key file (no passphrase) that may log in
	User       string     // the user to log in as: this process's

	t   testing.TB
	cmd *exec.Cmd
}

// Require skips a test without sshd, except under CI=true, which installs
// it.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Path); err != nil && os.Getenv("CI") != "true" {
		t.Skip("sshd is not installed (apt install openssh-server)")
	}
}

// Start starts a server (Require first); it stops with the test.
func Start(t testing.TB) *Server {
	t.Helper()
	Require(t)
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, Dir: t.TempDir(), User: u.Username}
	s.HostKey = WriteKey(t, filepath.Join(s.Dir, "host_ed25519"))
	s.Identity = filepath.Join(s.Dir, "id_ed25519")
	client := WriteKey(t, s.Identity)
	if err := os.WriteFile(filepath.Join(s.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(client.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.KnownHosts = filepath.Join(s.Dir, "known_hosts")
	// FreePort finds a port that was free: another test may take it
	// before sshd binds it. Then sshd tries another.
	for try := 0; ; try++ {
		s.Port = FreePort(t)
		line := knownhosts.Line([]string{fmt.Sprintf("[127.0.0.1]:%d", s.Port)}, s.HostKey.PublicKey())
		if err := os.WriteFile(s.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := s.launch()
		if err == nil {
			return s
		}
		if !strings.Contains(err.Error(), "Address already in use") || try == 2 {
			t.Fatal(err)
		}
	}
}

// Restart runs sshd again on its port, after Stop or Kill, and waits until
// it listens.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.launch(); err != nil {
		s.t.Fatal(err)
	}
}

// Pid is the listening sshd's process id (0 when stopped).
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// launch runs sshd and waits until it listens (it says so on stderr), or
// says what it printed before it ended.
func (s *Server) launch() error {
	t := s.t
	if os.Geteuid() == 0 {
		// Privilege separation needs this directory, which the Debian
		// package's service would make.
		os.MkdirAll("/run/sshd", 0o755)
	}
	cfg := filepath.Join(s.Dir, "sshd_config")
	home := filepath.Join(s.Dir, "home")
	os.Mkdir(home, 0o700)
	err := os.WriteFile(cfg, []byte(strings.Join([]string{
		fmt.Sprintf("Port %d", s.Port),
		"ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(s.Dir, "host_ed25519"),
		"AuthorizedKeysFile " + filepath.Join(s.Dir, "authorized_keys"),
		"PidFile " + filepath.Join(s.Dir, "sshd.pid"),
		"StrictModes no", "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password", "AllowTcpForwarding no", "X11Forwarding no",
		"PrintMotd no", "LogLevel INFO", "MaxSessions 1000",
		// The far side's shell reads no ~/.bashrc of the machine's user
		// (bash run by sshd does), and its programs skip the race
		// detector's pause at exit (sshd passes no environment on).
		fmt.Sprintf("SetEnv HOME=%s %q", home, "GORACE="+os.Getenv("GORACE")),
	}, "\n")+"\n"), 0o600)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(Path, "-D", "-e", "-f", cfg)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
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

// Stop ends the server with SIGTERM (its connections' processes go with
// their connections) and waits for it, within testwait.Limit. It does
// nothing to a server stopped already.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	cmd := s.cmd
	s.cmd = nil
	_ = testwait.Exit(s.t, cmd, "sshd, after SIGTERM,")
}

// Kill kills the server with SIGKILL: the listener and every connection's
// sshd process, as a crash of the service would. Programs the connections
// run see their stdin close.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	pid := s.cmd.Process.Pid
	for _, p := range append(descendants(pid), pid) {
		if exe, _ := os.Readlink("/proc/" + strconv.Itoa(p) + "/exe"); exe == Path {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	_ = s.cmd.Wait()
	s.cmd = nil
}

// descendants lists the processes below pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		p, _ := strconv.Atoi(filepath.Base(d))
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// WriteKey makes an ed25519 key and writes its private half to path.
func WriteKey(t testing.TB, path string) ssh.Signer {
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

// FreePort finds a loopback port nobody listens on (at the moment).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
