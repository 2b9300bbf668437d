//go:build linux

package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/permission"
	"golang.org/x/tools/txtar"
)

// bypassCase is one case of permission/testdata/execbypass: a command the
// static check once allowed (each class of issue 34 §2) that runs the
// denied stand-in zap.
type bypassCase struct {
	name  string
	deny  []string
	setup []string
	run   string
	ran   string // a shell test that the denied thing happened; default: zap's marker exists
}

func readBypassCases(t *testing.T) []bypassCase {
	t.Helper()
	files, _ := filepath.Glob("../../permission/testdata/execbypass/*.txtar")
	var cases []bypassCase
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range ar.Files {
			cases = append(cases, parseBypassCase(t, filepath.Base(f)+":"+sec.Name, string(sec.Data)))
		}
	}
	return cases
}

func parseBypassCase(t *testing.T, name, body string) bypassCase {
	c := bypassCase{name: name}
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for i, line := range lines {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "deny":
			c.deny = append(c.deny, v)
		case "setup":
			c.setup = append(c.setup, v)
		case "run":
			c.run = v
		case "ran":
			c.ran = v
		case "run-lines":
			c.run = strings.Join(lines[i+1:], "\n")
			return c
		}
	}
	if c.run == "" || len(c.deny) == 0 {
		t.Fatalf("%s: no run: or no deny: line", name)
	}
	return c
}

// TestExecBypassClasses replays every bypass class of the static check
// with the static check out of the way (the executor alone, as a test
// hook): with the exec check, zap is refused at its exec and the result
// says so; without it (plain bash), each class's first case runs zap,
// which shows the class is real.
func TestExecBypassClasses(t *testing.T) {
	cases := readBypassCases(t)
	if len(cases) == 0 {
		t.Skip("no cases in permission/testdata/execbypass")
	}
	seen := map[string]bool{}
	for _, c := range cases {
		// The first spelling of each class also runs without the check:
		// the class is real (each case was so when it was written).
		class, _, _ := strings.Cut(c.name, "/")
		first := !seen[class]
		seen[class] = true
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if ran := !first || replayBypass(t, c, false); !ran {
				t.Fatalf("without the exec check, %q did not run zap: the case shows nothing", c.run)
			}
			if ran := replayBypass(t, c, true); ran {
				t.Fatalf("with the exec check, %q still ran zap", c.run)
			}
		})
	}
}

// replayBypass runs a case in a fresh workspace, with or without the
// exec check, and reports whether zap ran.
func replayBypass(t *testing.T, c bypassCase, checked bool) bool {
	t.Helper()
	ws, home := t.TempDir(), t.TempDir()
	bin := filepath.Join(home, "bin")
	mark := filepath.Join(home, "zapped")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	zap := "#!/bin/sh\n: > '" + mark + "'\n"
	if err := os.WriteFile(filepath.Join(bin, "zap"), []byte(zap), 0o755); err != nil {
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
	for _, s := range c.setup {
		if err := sh(s); err != nil {
			t.Fatalf("setup %v", err)
		}
	}
	ranZap := func() bool {
		if c.ran != "" {
			return sh(c.ran) == nil
		}
		_, err := os.Stat(mark)
		return err == nil
	}
	if !checked { // bash alone: what the executor would run without the check
		_ = sh(c.run)
		return ranZap()
	}
	rules, err := permission.NewExecRules(c.deny, bin)
	if err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, newExec(t, &Options{Cwd: ws, Env: env, BaseEnv: []string{}, ExecRules: rules}), c.run)
	ran := ranZap()
	if !ran && len(res.Refused) == 0 {
		t.Errorf("zap did not run, but the result names no refusal: %+v", res)
	}
	return ran
}
