//go:build linux

package bashtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

func (s *suite) resolveTests(t *testing.T) {
	parallel(t, "workdir defaults", s.workdirDefaults)
	parallel(t, "workdir with no configured default is the process cwd", s.workdirNoDefault)
	parallel(t, "timeout defaults and cap", s.timeoutDefaults)
	parallel(t, "negative timeout is a TimeoutError", s.negativeTimeout)
	parallel(t, "command and owner kept", s.commandKept)
	parallel(t, "empty command is a CommandError", s.emptyCommand)
	parallel(t, "NUL in the command is a CommandError and starts nothing", s.nulCommand)
}

// pwd is where a spec's command runs, as `pwd -P` prints it.
func (h *harness) pwd(spec bash.ExecSpec) string {
	h.t.Helper()
	spec.Command = "pwd -P"
	res, err := h.e.Run(h.ctx(), spec)
	if err != nil || res.ExitCode != 0 {
		h.t.Fatalf("pwd in %s: %v %+v", spec.Workdir, err, res)
	}
	return strings.TrimSuffix(res.Stdout.Text, "\n")
}

func (s *suite) workdirDefaults(t *testing.T) {
	h := s.shared(t, s.common)
	sub := filepath.Join(h.cfg.Cwd, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// An absolute directory every executor's commands see: a jail may have
	// a /tmp of its own, where a directory of the host's /tmp is missing.
	other := "/"
	tests := []struct{ name, workdir, want string }{
		{"none: the default", "", h.cfg.Cwd},
		{"absolute: as given", other, other},
		{"relative: joined to the default", "sub", sub},
		{"relative with dot-dot", "sub/../sub/.", sub},
	}
	for _, tc := range tests {
		spec := h.resolve(bash.ExecRequest{Command: "true", Workdir: tc.workdir})
		if !filepath.IsAbs(spec.Workdir) || filepath.Clean(spec.Workdir) != tc.want {
			t.Errorf("%s: Workdir %q resolves to %q; want %q", tc.name, tc.workdir, spec.Workdir, tc.want)
			continue
		}
		real, _ := filepath.EvalSymlinks(tc.want)
		if got := h.pwd(spec); got != real {
			t.Errorf("%s: the command ran in %q; want %q", tc.name, got, real)
		}
	}
}

func (s *suite) workdirNoDefault(t *testing.T) {
	h := s.harness(t, func(c *Config) { c.Cwd = "" })
	spec := h.resolve(bash.ExecRequest{Command: "true"})
	if !filepath.IsAbs(spec.Workdir) {
		t.Fatalf("Workdir %q is not absolute", spec.Workdir)
	}
	real, _ := filepath.EvalSymlinks(spec.Workdir)
	if got := h.pwd(spec); got != real {
		t.Errorf("the command ran in %q; the spec says %q", got, spec.Workdir)
	}
}

func (s *suite) timeoutDefaults(t *testing.T) {
	h := s.shared(t, s.common)
	tests := []struct {
		name      string
		req, want time.Duration
	}{
		{"zero: the default", 0, h.cfg.Timeout},
		{"below the cap: as given", 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"one nanosecond", 1, 1},
		{"at the cap", h.cfg.MaxTimeout, h.cfg.MaxTimeout},
		{"above the cap: capped", h.cfg.MaxTimeout + time.Hour, h.cfg.MaxTimeout},
	}
	for _, tc := range tests {
		spec := h.resolve(bash.ExecRequest{Command: "true", Timeout: tc.req})
		if spec.Timeout != tc.want {
			t.Errorf("%s: Timeout %v resolves to %v; want %v", tc.name, tc.req, spec.Timeout, tc.want)
		}
	}
}

func (s *suite) negativeTimeout(t *testing.T) {
	h := s.shared(t, s.common)
	_, err := h.e.Resolve(bg, bash.ExecRequest{Command: "true", Timeout: -time.Second})
	var te *bash.TimeoutError
	if !errors.As(err, &te) || te.Timeout != -time.Second {
		t.Errorf("Resolve with Timeout -1s: %v (%T); want a *bash.TimeoutError for -1s", err, err)
	}
}

func (s *suite) commandKept(t *testing.T) {
	h := s.shared(t, s.common)
	for _, owner := range []string{"", "alice", "a session/with spaces"} {
		cmd := "echo 'é \\ \"x\"'\n  # a comment\n"
		spec := h.resolve(bash.ExecRequest{Command: cmd, Owner: owner})
		if spec.Command != cmd || spec.Owner != owner || spec.SpillAfter != 0 || spec.OnOutput != nil {
			t.Errorf("Resolve(%q, owner %q) = %+v", cmd, owner, spec)
		}
	}
}

func (s *suite) emptyCommand(t *testing.T) {
	h := s.shared(t, s.common)
	for _, cmd := range []string{"", " ", "\t\n  \n"} {
		_, err := h.e.Resolve(bg, bash.ExecRequest{Command: cmd})
		var ce *bash.CommandError
		if !errors.As(err, &ce) || ce.Problem != bash.ErrEmptyCommand || !errors.Is(err, bash.ErrEmptyCommand) {
			t.Errorf("Resolve(%q): %v (%T); want a *bash.CommandError for bash.ErrEmptyCommand", cmd, err, err)
		}
	}
}

// nulCommand: Resolve, Run and Start all refuse a command holding a NUL
// byte, saying where it is, and none of them starts a process for it.
func (s *suite) nulCommand(t *testing.T) {
	h := s.harness(t, nil)
	ran := filepath.Join(h.cfg.Cwd, "ran")
	cmd := "touch " + quote(ran) + "; echo \x00 after"
	at := strings.IndexByte(cmd, 0)
	check := func(what string, err error) {
		t.Helper()
		var ce *bash.CommandError
		if !errors.As(err, &ce) || ce.Problem != bash.ErrNULInCommand || ce.Offset != at || !errors.Is(err, bash.ErrNULInCommand) {
			t.Errorf("%s: %v (%T); want a *bash.CommandError for bash.ErrNULInCommand at byte %d", what, err, err, at)
		}
	}
	_, err := h.e.Resolve(bg, bash.ExecRequest{Command: cmd})
	check("Resolve", err)
	spec := h.resolve(bash.ExecRequest{Command: "true", Owner: "alice"})
	spec.Command = cmd
	_, err = h.e.Run(h.ctx(), spec)
	check("Run", err)
	_, err = h.e.Start(h.ctx(), spec)
	check("Start", err)
	h.close() // waits for any process that was started after all
	if _, err := os.Stat(ran); err == nil {
		t.Error("a process was started for the command")
	}
}
