package remote

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSH dials `dsh-bash executor` on a host over SSH
// (golang.org/x/crypto/ssh): one connection per stream, which the
// Executor multiplexes for all its calls, kept alive with keepalives. Its
// zero value is not usable: set Host, or make it with ParseURL.
type SSH struct {
	// User and Host to log in as and to; Port defaults to 22.
	User, Host string
	Port       int
	// KnownHosts are the files that must hold the host's key; an unknown
	// or changed key is refused. Default ~/.ssh/known_hosts.
	KnownHosts []string
	// IdentityFiles are private keys to offer, after the SSH agent's
	// ($SSH_AUTH_SOCK). Default: ~/.ssh/id_ed25519, id_ecdsa and id_rsa,
	// those that exist. Keys with a passphrase are only used through the
	// agent.
	IdentityFiles []string
	// NoAgent leaves the SSH agent out.
	NoAgent bool
	// Command is what runs on the host; default "dsh-bash executor".
	Command string
	// Upload, when Command runs dsh-bash and the host has none on its
	// PATH, copies the running binary to CacheDir/SHA256/dsh-bash on the
	// host, checked by hash there, and runs that; it needs the same OS and
	// architecture there.
	Upload bool
	// CacheDir is where uploads go on the host (a shell word: $HOME is the
	// host's). Default "$HOME/.cache/dsh-bash".
	CacheDir string
	// Timeout bounds connecting and the SSH handshake. Default 20 s.
	Timeout time.Duration
	// KeepAlive is the interval of keepalives; a connection that misses
	// one for that long again is closed. Default 15 s.
	KeepAlive time.Duration
	// WaitDelay is how long the far side gets, once the stream is closed,
	// to close its executor and exit before the connection is closed.
	// Default 10 s.
	WaitDelay time.Duration
	// Stderr receives the far side's stderr; nil discards it.
	Stderr io.Writer
	// Client, if set, is an open connection to the host to use, made and
	// owned by the caller (for a jump host, certificates, or many executors
	// on one connection): Dial opens a session on it and neither connects
	// nor checks host keys nor sends keepalives, and closing the stream
	// ends its session, not the connection. User and Host still name the
	// host in errors.
	Client *ssh.Client
}

// ParseURL reads ssh://[user@]host[:port][/workspace]. It returns the
// dialer and the workspace (the path, "" for none).
func ParseURL(raw string) (*SSH, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", fmt.Errorf("remote %q: %w", raw, err)
	}
	if u.Scheme != "ssh" || u.Host == "" || u.Opaque != "" {
		return nil, "", fmt.Errorf("remote %q: want ssh://[user@]host[:port][/workspace]", raw)
	}
	if _, ok := u.User.Password(); ok {
		return nil, "", fmt.Errorf("remote %q: passwords are not taken; use keys", raw)
	}
	s := &SSH{User: u.User.Username(), Host: u.Hostname()}
	if p := u.Port(); p != "" {
		if s.Port, err = strconv.Atoi(p); err != nil || s.Port <= 0 || s.Port > 65535 {
			return nil, "", fmt.Errorf("remote %q: bad port %q", raw, p)
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, "", fmt.Errorf("remote %q: no query or fragment is taken", raw)
	}
	ws := u.Path
	if ws == "/" {
		ws = ""
	}
	return s, ws, nil
}

// Addr is host:port.
func (s *SSH) Addr() string {
	port := s.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(s.Host, strconv.Itoa(port))
}

// Name is user@host[:port], for errors.
func (s *SSH) Name() string {
	name := s.Host
	if s.Port != 0 && s.Port != 22 {
		name = s.Addr()
	}
	if s.User != "" {
		name = s.User + "@" + name
	}
	return name
}

func (s *SSH) timeout() time.Duration   { return durationOr(s.Timeout, 20*time.Second) }
func (s *SSH) keepAlive() time.Duration { return durationOr(s.KeepAlive, 15*time.Second) }
func (s *SSH) waitDelay() time.Duration { return durationOr(s.WaitDelay, 10*time.Second) }

func durationOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Dial connects, checks the host key, logs in and starts the far side's
// executor on a session whose stdio is the stream (with Client set, it
// only starts the session).
func (s *SSH) Dial(ctx context.Context) (io.ReadWriteCloser, error) {
	if s.Client != nil {
		return s.start(ctx, s.Client, false)
	}
	client, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.start(ctx, client, true)
	if err != nil {
		client.Close()
		return nil, err
	}
	st.stopKeepAlive = keepAlive(client, s.keepAlive())
	return st, nil
}

// start starts the far side's executor (uploading it first if asked) on a
// session of client, owned or not. Opening the session and the upload
// wait on the host: ctx bounds them by closing what this stream owns, the
// connection or else the session.
func (s *SSH) start(ctx context.Context, client *ssh.Client, owned bool) (*sshStream, error) {
	var cancelled atomic.Bool
	var sess atomic.Pointer[ssh.Session]
	stop := context.AfterFunc(ctx, func() {
		cancelled.Store(true)
		if owned {
			client.Close()
		} else if p := sess.Load(); p != nil {
			p.Close()
		}
	})
	defer stop()
	cmd := s.Command
	if cmd == "" {
		cmd = "dsh-bash executor"
	}
	var err error
	if s.Upload {
		if cmd, err = s.bootstrap(ctx, client, cmd); err != nil {
			return nil, err
		}
	}
	st, err := startSession(client, cmd, s.Stderr, func(p *ssh.Session) {
		sess.Store(p)
		if cancelled.Load() {
			p.Close()
		}
	})
	if !stop() || err != nil {
		if err == nil {
			st.Close()
			err = ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w", s.Name(), err)
	}
	st.wait, st.ownsClient = s.waitDelay(), owned
	return st, nil
}

// connect opens the SSH connection, bounded by ctx and Timeout.
func (s *SSH) connect(ctx context.Context) (*ssh.Client, error) {
	k := &keys{s: s}
	defer k.close()
	cfg, err := s.config(k)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name(), err)
	}
	if algos := s.knownAlgorithms(cfg.HostKeyCallback); len(algos) > 0 {
		cfg.HostKeyAlgorithms = algos
	}
	stop := context.AfterFunc(ctx, func() {
		conn.SetDeadline(time.Unix(1, 0))
		k.close() // a handshake waiting on the agent (a confirmation) ends too
	})
	c, chans, reqs, err := ssh.NewClientConn(conn, s.Addr(), cfg)
	if !stop() || err != nil {
		conn.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, s.explain(err)
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

// config is the client configuration: the user, the keys, the host keys.
func (s *SSH) config(k *keys) (*ssh.ClientConfig, error) {
	name := s.User
	if name == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("%s: no user given and none known: %w", s.Host, err)
		}
		name = u.Username
	}
	hostKeys, err := s.hostKeyCallback()
	if err != nil {
		return nil, err
	}
	return &ssh.ClientConfig{
		User:            name,
		Auth:            []ssh.AuthMethod{ssh.PublicKeysCallback(k.signers)},
		HostKeyCallback: hostKeys,
		Timeout:         s.timeout(),
	}, nil
}

func (s *SSH) hostKeyCallback() (ssh.HostKeyCallback, error) {
	files := s.KnownHosts
	if len(files) == 0 {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("%s: no known_hosts file: %w", s.Name(), err)
		}
		files = []string{filepath.Join(home, ".ssh", "known_hosts")}
	}
	var present []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			present = append(present, f)
		}
	}
	if len(present) == 0 {
		return nil, fmt.Errorf("%s: the host key cannot be checked: no known_hosts file (%s); add the host's key, e.g. ssh-keyscan -p %d %s >> %s, after checking its fingerprint",
			s.Name(), strings.Join(files, ", "), portOr22(s.Port), s.Host, files[0])
	}
	cb, err := knownhosts.New(present...)
	if err != nil {
		return nil, fmt.Errorf("%s: reading known_hosts: %w", s.Name(), err)
	}
	return cb, nil
}

func portOr22(p int) int {
	if p == 0 {
		return 22
	}
	return p
}

// knownAlgorithms are the key types known_hosts holds for the host, so that
// the server is asked for a key of a type that can be checked (else it may
// offer another and look changed). A throwaway key asks the database.
func (s *SSH) knownAlgorithms(cb ssh.HostKeyCallback) []string {
	_, priv, _ := ed25519.GenerateKey(nil)
	probe, _ := ssh.NewSignerFromKey(priv)
	var ke *knownhosts.KeyError
	if err := cb(knownhosts.Normalize(s.Addr()), &net.TCPAddr{}, probe.PublicKey()); !errors.As(err, &ke) {
		return nil
	}
	var algos []string
	for _, k := range ke.Want {
		switch t := k.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			algos = append(algos, t)
		}
	}
	return algos
}

// explain words the errors of the SSH handshake for the user.
func (s *SSH) explain(err error) error {
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &ke) && len(ke.Want) == 0:
		return fmt.Errorf("%s: the host's key is not in known_hosts, so it is refused: check its fingerprint and add it (ssh-keyscan -p %d %s >> ~/.ssh/known_hosts)", s.Name(), portOr22(s.Port), s.Host)
	case errors.As(err, &ke):
		return fmt.Errorf("%s: the host's key has CHANGED since it was recorded (%s): refused, as it may be an attack; if the host was really reinstalled, remove the old key (ssh-keygen -R %s)", s.Name(), ke.Want[0].String(), s.Host)
	case errors.As(err, &re):
		return fmt.Errorf("%s: the host's key is revoked (%s): refused", s.Name(), re.Revoked.String())
	case strings.Contains(err.Error(), "unable to authenticate"):
		return fmt.Errorf("%s: no key was accepted (the SSH agent's and %s): %w", s.Name(), strings.Join(s.identityFiles(), ", "), err)
	}
	return fmt.Errorf("%s: %w", s.Name(), err)
}

// keys offers the keys of one handshake: the agent's, then the identity
// files'. The agent's sign through a connection to it that close ends.
type keys struct {
	s     *SSH
	mu    sync.Mutex
	agent net.Conn
}

func (k *keys) signers() ([]ssh.Signer, error) {
	var out []ssh.Signer
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" && !k.s.NoAgent {
		if conn := k.dialAgent(sock); conn != nil {
			if ss, err := agent.NewClient(conn).Signers(); err == nil {
				out = append(out, ss...)
			}
		}
	}
	return append(out, k.s.fileSigners()...), nil
}

// dialAgent connects to the agent once per handshake.
func (k *keys) dialAgent(sock string) net.Conn {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.agent != nil {
		return nil
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil
	}
	k.agent = conn
	return conn
}

func (k *keys) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.agent != nil {
		k.agent.Close()
	}
}

// fileSigners are the identity files' keys that need no passphrase.
func (s *SSH) fileSigners() []ssh.Signer {
	var out []ssh.Signer
	for _, f := range s.identityFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if k, err := ssh.ParsePrivateKey(b); err == nil {
			out = append(out, k)
		}
	}
	return out
}

func (s *SSH) identityFiles() []string {
	if len(s.IdentityFiles) > 0 {
		return s.IdentityFiles
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		p := filepath.Join(home, ".ssh", n)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// keepAlive sends keepalives every interval and closes the connection when
// one goes unanswered for an interval; the returned func stops it.
func keepAlive(c *ssh.Client, every time.Duration) func() {
	stop := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			answered := make(chan struct{})
			go func() {
				_, _, _ = c.SendRequest("keepalive@openssh.com", true, nil)
				close(answered)
			}()
			select {
			case <-answered:
			case <-time.After(every):
				c.Close()
				return
			case <-stop:
				return
			}
		}
	}()
	return func() { once.Do(func() { close(stop) }) }
}
