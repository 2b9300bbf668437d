//go:build linux

package remote

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestApplyConfig: an alias of ~/.ssh/config gives the host, user, port,
// keys and known_hosts, as ssh reads them (first match wins, wildcards
// too); what the URL says wins; a missing file changes nothing.
func TestApplyConfig(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config")
	os.WriteFile(cfg, []byte(`
Host box
  HostName 10.0.0.7
  User deploy
  Port 2222
  IdentityFile ~/.ssh/box_key
  IdentityFile %d/.ssh/other
  UserKnownHostsFile ~/.ssh/known_box

Host %h-alias
  HostName %h.example.com

Host *
  User everyone
  Port 2200
`), 0o600)
	home, _ := os.UserHomeDir()
	tests := []struct {
		url  string
		want SSH
	}{
		{"ssh://box", SSH{Host: "10.0.0.7", User: "deploy", Port: 2222,
			IdentityFiles: []string{home + "/.ssh/box_key", home + "/.ssh/other"}, KnownHosts: []string{home + "/.ssh/known_box"}}},
		{"ssh://root@box:22", SSH{Host: "10.0.0.7", User: "root", Port: 22,
			IdentityFiles: []string{home + "/.ssh/box_key", home + "/.ssh/other"}, KnownHosts: []string{home + "/.ssh/known_box"}}},
		{"ssh://elsewhere", SSH{Host: "elsewhere", User: "everyone", Port: 2200}},
	}
	for _, tt := range tests {
		s, _, err := ParseURL(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*s, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.url, *s, tt.want)
		}
	}
	s, _, _ := ParseURL("ssh://box")
	if err := s.ApplyConfig(filepath.Join(t.TempDir(), "none")); err != nil || s.Host != "box" {
		t.Errorf("a missing file: %v, host %q", err, s.Host)
	}
	os.WriteFile(cfg, []byte("Host box\n  Port nope\n"), 0o600)
	if err := s.ApplyConfig(cfg); err == nil {
		t.Error("a bad Port: no error")
	}
}

// TestSSHAlias: a remote named by an alias of the user's SSH config runs
// commands on the host the alias names, over real sshd.
func TestSSHAlias(t *testing.T) {
	t.Parallel()
	srv := startSSHD(t)
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("Host devbox\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n",
		srv.Port, u.Username, srv.Identity, srv.KnownHosts)), 0o600)
	d, _, err := ParseURL("ssh://devbox")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	d.NoAgent, d.Stderr, d.Command = true, os.Stderr, serveCommand(t, bashtest.Config{Cwd: t.TempDir()})
	e := dialT(t, d.Dial, &Options{Host: d.Name()})
	res, err := testwait.Reply("run over devbox", func(ctx context.Context) (bash.RunResult, error) {
		spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "echo via-alias"})
		if err != nil {
			return bash.RunResult{}, err
		}
		return e.Run(ctx, spec)
	})
	if err != nil || res.Stdout.Text != "via-alias\n" {
		t.Errorf("run: %v, stdout %q", err, res.Stdout.Text)
	}
}
