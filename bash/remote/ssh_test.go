//go:build linux

package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"mvdan.cc/sh/v3/syntax"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/servetest"
	"github.com/dshgo/dsh/internal/sshdtest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
)

// serveCommand is the shell command that runs a far side with the
// suite's knobs: servetest.Farside, built without the race detector
// (TestConformance serves in this race-built process, over pipes).
func serveCommand(t testing.TB, c bashtest.Config) string {
	cfg, err := json.Marshal(serverConfig{Config: c, SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	q := func(s string) string {
		out, err := syntax.Quote(s, syntax.LangBash)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return fmt.Sprintf("exec %s executor %s", q(servetest.Farside(t)), q(string(cfg)))
}

// overSSH serves from this test binary on the far side of a real sshd,
// on a session of conn (nil: a connection of its own).
func overSSH(s *sshd, conn *ssh.Client) bashtest.NewFunc {
	return func(t *testing.T, c bashtest.Config) bash.Executor {
		d := s.dialer(serveCommand(t, c))
		d.Client = conn
		return dialT(t, d.Dial, &Options{Host: d.Name()})
	}
}

// TestSSHConformance runs the executor contract over SSH to a real
// OpenSSH server on loopback, each executor on a session of one shared
// connection (SSH.Client), and the shared transcript through a
// connection of its own (as --remote dials).
func TestSSHConformance(t *testing.T) {
	t.Parallel()
	proctest.Long(t)
	s := startSSHD(t)
	conn := s.connect(t)
	t.Run("suite", func(t *testing.T) { bashtest.Run(t, overSSH(s, conn)) })
	t.Run("transcript", func(t *testing.T) {
		t.Parallel()
		toolbashtest.Transcript(t, overSSH(s, nil), "../../toolbash/toolbashtest/testdata/transcript.txtar", false)
	})
}

// TestSSHHostKeys: an unknown host key and a changed one are refused with
// an error that says which and what to do; so is a key the host does not
// accept.
func TestSSHHostKeys(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	empty := t.TempDir() + "/known_hosts"
	os.WriteFile(empty, nil, 0o600)
	other := t.TempDir() + "/known_hosts"
	otherKey := sshdtest.WriteKey(t, t.TempDir()+"/k")
	os.WriteFile(other, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", s.Port, string(ssh.MarshalAuthorizedKey(otherKey.PublicKey())))), 0o600)
	stranger := t.TempDir() + "/id"
	sshdtest.WriteKey(t, stranger)
	tests := []struct {
		name string
		edit func(*SSH)
		want string
	}{
		{"unknown host", func(d *SSH) { d.KnownHosts = []string{empty} }, "the host's key is not in known_hosts, so it is refused"},
		{"changed key", func(d *SSH) { d.KnownHosts = []string{other} }, "the host's key has CHANGED since it was recorded"},
		{"no known_hosts", func(d *SSH) { d.KnownHosts = []string{t.TempDir() + "/none"} }, "the host key cannot be checked: no known_hosts file"},
		{"key not accepted", func(d *SSH) { d.IdentityFiles = []string{stranger} }, "no key was accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := s.dialer("true")
			tt.edit(d)
			_, err := testwait.Reply("hello of "+d.Name(), func(ctx context.Context) (*Executor, error) {
				return Dial(ctx, d.Dial, &Options{Host: d.Name()})
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), d.Name()) {
				t.Errorf("err = %v, want one naming %s and saying %q", err, d.Name(), tt.want)
			}
		})
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw, user, host, ws, err string
		port                     int
	}{
		{raw: "ssh://box", host: "box"},
		{raw: "ssh://dev@box:2222/srv/work", user: "dev", host: "box", port: 2222, ws: "/srv/work"},
		{raw: "ssh://[::1]:22/", host: "::1", port: 22},
		{raw: "http://box", err: "want ssh://"},
		{raw: "ssh://u:pw@box", err: "passwords are not taken"},
		{raw: "ssh://box:0", err: "bad port"},
		{raw: "ssh://box/w?x=1", err: "no query"},
	}
	for _, tt := range tests {
		s, ws, err := ParseURL(tt.raw)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.raw, err, tt.err)
			}
			continue
		}
		if err != nil || s.User != tt.user || s.Host != tt.host || s.Port != tt.port || ws != tt.ws {
			t.Errorf("%s: %+v %q %v", tt.raw, s, ws, err)
		}
	}
}

// TestSSHSharedConnection: streams on a connection the caller owns
// (SSH.Client) end their sessions, never the connection, and a dial whose
// context ends while its session opens leaves the connection working.
func TestSSHSharedConnection(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	conn := s.connect(t)
	c := bashtest.Config{Cwd: t.TempDir(), Timeout: time.Minute, MaxTimeout: time.Minute,
		Grace: time.Second, DrainDelay: 100 * time.Millisecond, MaxOutputBytes: 4096, MaxTasksPerOwner: 4, MaxTasks: 4}
	d := s.dialer(serveCommand(t, c))
	d.Client = conn
	a := dialT(t, d.Dial, &Options{Host: d.Name()})
	b := dialT(t, d.Dial, &Options{Host: d.Name()})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	echo := func(e *Executor) string {
		t.Helper()
		res, err := testwait.Reply("a run over the shared connection", func(ctx context.Context) (bash.RunResult, error) {
			spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "echo still"})
			if err != nil {
				return bash.RunResult{}, err
			}
			return e.Run(ctx, spec)
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.Stdout.Text
	}
	if got := echo(b); got != "still\n" {
		t.Errorf("the other stream after one closed: %q", got)
	}
	b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Dial(ctx); err == nil {
		t.Error("a dial with its context done succeeded")
	}
	last := dialT(t, d.Dial, &Options{Host: d.Name()})
	defer last.Close()
	if got := echo(last); got != "still\n" {
		t.Errorf("a new stream on the connection after the others: %q", got)
	}
}
