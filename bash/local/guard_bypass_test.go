//go:build linux

package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dshgo/dsh/internal/execbypass"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/permission"
)

// TestExecBypassClasses replays every bypass class of the static check
// with the static check out of the way (the executor alone, as a test
// hook): with the exec check, zap is refused at its exec and the result
// says so; without it (plain bash), each class's first case runs zap,
// which shows the class is real.
func TestExecBypassClasses(t *testing.T) {
	cases, err := execbypass.ReadDir("../../permission/testdata/execbypass")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Skip("no cases in permission/testdata/execbypass")
	}
	seen := map[string]bool{}
	for _, c := range cases {
		// The first spelling of each class also runs without the check:
		// the class is real (each case was so when it was written).
		first := !seen[c.Class()]
		seen[c.Class()] = true
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			if ran := !first || replayBypass(t, c, false); !ran {
				t.Fatalf("without the exec check, %q did not run zap: the case shows nothing", c.Run)
			}
			if ran := replayBypass(t, c, true); ran {
				t.Fatalf("with the exec check, %q still ran zap", c.Run)
			}
		})
	}
}

// replayBypass runs a case in a fresh workspace, with or without the
// exec check, and reports whether zap ran.
func replayBypass(t *testing.T, c execbypass.Case, checked bool) bool {
	t.Helper()
	ws, home := t.TempDir(), t.TempDir()
	bin := filepath.Join(home, "bin")
	mark := filepath.Join(home, "zapped")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	zap := "#!/bin/sh\n: > '" + mark + "'\n"
	if err := proctest.WriteProgram(filepath.Join(bin, "zap"), []byte(zap)); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + home, "ZAPMARK=" + mark}
	sh := func(s string) error {
		cmd := exec.Command("bash", "-c", s)
		cmd.Dir, cmd.Env = ws, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%q: %w: %s", s, err, out)
		}
		return nil
	}
	for _, s := range c.Setup {
		if err := sh(s); err != nil {
			t.Fatalf("setup %v", err)
		}
	}
	ranZap := func() bool {
		if c.Ran != "" {
			return sh(c.Ran) == nil
		}
		_, err := os.Stat(mark)
		return err == nil
	}
	if !checked { // bash alone: what the executor would run without the check
		_ = sh(c.Run)
		return ranZap()
	}
	rules, err := permission.NewExecRules(c.Deny, bin)
	if err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, newExec(t, &Options{Cwd: ws, Env: env, BaseEnv: []string{}, ExecRules: rules}), c.Run)
	ran := ranZap()
	if !ran && len(res.Refused) == 0 {
		t.Errorf("zap did not run, but the result names no refusal: %+v", res)
	}
	return ran
}
