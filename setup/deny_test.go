package setup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/permission"
	"github.com/dshgo/dsh/toolbash"
)

// TestDenyAtExec: the deny rules configured are enforced by the executor
// setup builds, at exec, and the model's instructions say so; a bad
// pattern is a *ConfigError.
func TestDenyAtExec(t *testing.T) {
	dir := t.TempDir()
	zap := filepath.Join(dir, "zap")
	if err := proctest.WriteProgram(zap, []byte("#!/bin/sh\ntouch \"$0.ran\"\n")); err != nil {
		t.Fatal(err)
	}
	deny := Permissions{Rules: []RuleSet{{Source: "--deny", Decision: permission.Deny, Patterns: []string{"zap"}}}}
	s, err := New(t.Context(), &Config{Sandbox: Sandbox{Mode: "off"}, Permissions: deny, Local: &local.Options{Cwd: dir}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	spec, err := s.Executor().Resolve(ctx, bash.ExecRequest{Command: "c=./zap; $c; echo after"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Executor().Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(zap + ".ran"); err == nil || len(res.Refused) != 1 {
		t.Errorf("zap ran, or the result does not say it was refused: %+v", res)
	}
	if got := s.Instructions(true); !strings.Contains(got, toolbash.ExecDenyText) {
		t.Errorf("instructions %q do not say deny rules hold at exec", got)
	}
	bad := Permissions{Rules: []RuleSet{{Source: "--deny", Decision: permission.Deny, Patterns: []string{"'x"}}}}
	if _, err := New(t.Context(), &Config{Sandbox: Sandbox{Mode: "off"}, Permissions: bad, Local: &local.Options{Cwd: dir}}, nil); err == nil {
		t.Error("a deny pattern that does not parse was taken")
	}
}
