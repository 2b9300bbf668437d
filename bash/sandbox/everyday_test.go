//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
)

// TestEverydayWork runs, inside the jail with the default policy, the work
// agents do all day: each toolchain the machine has builds or installs in
// the workspace, with its caches writable. Users of other sandboxes
// complain most about these breaking.
//
// The commands get a home directory of their own (pip install --user
// writes there, not in the user's), with each tool's cache named by its
// variable; the machine's toolchains stay where they are, read-only. A
// toolchain that cannot run here at all is skipped with the reason, except
// under CI=true for those .ci/run provides (go, git).
func TestEverydayWork(t *testing.T) {
	t.Parallel()
	proctest.Long(t)
	cases := []struct {
		name, tool string
		ci         bool // .ci/run provides it: required under CI=true
		files      map[string]string
		host       string // run on the host in the workspace before cmd, and again after it
		cmd        string
	}{
		// -race: the jail shares the host's build cache, which the
		// race-built suite has filled with the standard library so
		// built; without it the jail compiles the library afresh (20 s
		// and more on a loaded machine) for what the test shows. (go run
		// would add a link and an exec from the temporary directory
		// that go test makes already.)
		{"go build and test", "go", true, map[string]string{
			"go.mod":        "module example.com/m\n\ngo 1.21\n",
			"m.go":          "package m\n\nfunc Two() int { return 2 }\n",
			"m_test.go":     "package m\n\nimport \"testing\"\n\nfunc TestTwo(t *testing.T) { if Two() != 2 { t.Fatal() } }\n",
			"cmd/x/main.go": "package main\n\nfunc main() { println(\"built\") }\n",
		}, "", "go build -race ./... && go test -race -count=1 ./..."},
		{"git commit", "git", true, map[string]string{"a.txt": "a\n"}, "",
			"git init -q . && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline | wc -l"},
		// A repository that exists at the jail's start (its .git protected,
		// its missing entries made): commit, branch, worktree, push and
		// fetch work, and so does git on the host before and after.
		{"git in an existing repository", "git", true, map[string]string{"a.txt": "a\n"},
			"if test -d .git; then git status --short >/dev/null && git log -1 --format=%s | grep -qx jail; " +
				"else git init -q . && git init -q --bare up.git && git remote add up ./up.git && " +
				"git add a.txt && git -c user.name=t -c user.email=t@t commit -qm host; fi",
			"git checkout -qb topic && echo b > b.txt && git add b.txt && git -c user.name=t -c user.email=t@t commit -qm jail && " +
				"git worktree add -q wt main 2>/dev/null || git worktree add -q wt master && git push -q up topic && git fetch -q up && git log --oneline | wc -l"},
		{"npm install", "npm", false, map[string]string{
			"package.json":     `{"name":"app","version":"1.0.0","dependencies":{"lib":"file:./lib"}}`,
			"lib/package.json": `{"name":"lib","version":"1.0.0","main":"index.js"}`,
			"lib/index.js":     "module.exports = 42;\n",
		}, "", "npm install --offline --no-audit --no-fund >/dev/null && node -e 'console.log(require(\"lib\"))'"},
		{"pip install --user", "pip3", false, map[string]string{"mkwheel.py": mkWheel}, "",
			"py=$(python3 -c 'import sys; print(sys.executable)') && $py mkwheel.py && " +
				// A distribution's Python (PEP 668) refuses --user installs
				// unless told: what an agent does there too.
				"managed=$($py -c 'import sysconfig, os; print(os.path.exists(os.path.join(sysconfig.get_path(\"stdlib\"), \"EXTERNALLY-MANAGED\")) and \"--break-system-packages\" or \"\")') && " +
				"$py -m pip install -q --user $managed --disable-pip-version-check --no-index dshprobe-1.0-py3-none-any.whl && cd / && $py -c 'import dshprobe; print(dshprobe.X)'"},
		{"cargo build", "cargo", false, map[string]string{
			"Cargo.toml":  "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
			"src/main.rs": "fn main() { println!(\"built\"); }\n",
		}, "", "cargo build --offline -q && ./target/debug/probe"},
	}
	home := t.TempDir()
	env, writable := everydayEnv(t, home)
	e, err := newSandbox(t, &Options{Local: &local.Options{Env: env},
		Policy: Policy{Home: home, Writable: writable}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each in a session (a jail) of its own
			if why := cannotRun(c.tool, env); why != "" {
				if c.ci && os.Getenv("CI") == "true" {
					t.Fatalf("CI=true, and .ci/run provides %s, but %s", c.tool, why)
				}
				t.Skipf("%s cannot run on this machine: %s", c.tool, why)
			}
			ws := t.TempDir()
			for name, body := range c.files {
				os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755)
				os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644)
			}
			onHost(t, ws, env, c.host)
			ctx := context.Background()
			spec, _ := e.Resolve(ctx, bash.ExecRequest{Command: c.cmd, Owner: c.name, Workspace: ws, Workdir: ws, Timeout: 5 * time.Minute})
			res, err := e.Run(ctx, spec)
			if err != nil || res.ExitCode != 0 {
				t.Errorf("%v, exit %d\nstdout: %s\nstderr: %s", err, res.ExitCode, res.Stdout.Text, res.Stderr.Text)
			}
			onHost(t, ws, env, c.host)
		})
	}
}

// onHost runs script (if any) on the host in dir, with env added.
func onHost(t *testing.T, dir string, env []string, script string) {
	t.Helper()
	if script == "" {
		return
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("on the host: %s: %v\n%s", script, err, out)
	}
}

// everydayEnv is the environment of the everyday commands: home as HOME,
// every tool cache named inside it by its variable, except Go's build and
// module caches, which stay the machine's (a cold Go cache would rebuild
// the standard library for every run of the test) and are returned to be
// made writable; the variables that find installed toolchains (rustup's,
// pyenv's) keep pointing at the user's home, read-only.
func everydayEnv(t *testing.T, home string) (env, writable []string) {
	env = []string{
		"HOME=" + home,
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"CARGO_HOME=" + filepath.Join(home, ".cargo"),
		"npm_config_cache=" + filepath.Join(home, ".npm"),
		"PIP_CACHE_DIR=" + filepath.Join(home, ".cache", "pip"),
		"PYTHONUSERBASE=" + filepath.Join(home, ".local"),
		"GOPATH=" + filepath.Join(home, "go"),
		"GOTOOLCHAIN=local", "GOFLAGS=-mod=mod",
	}
	if out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) == 2 {
			env = append(env, "GOCACHE="+f[0], "GOMODCACHE="+f[1])
			writable = append(writable, f...)
		}
	}
	user, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv"} {
		if v := os.Getenv(name); v != "" {
			env = append(env, name+"="+v)
		} else if _, err := os.Stat(filepath.Join(user, dir)); err == nil {
			env = append(env, name+"="+filepath.Join(user, dir))
		}
	}
	return env, writable
}

// cannotRun says why tool cannot run on this machine with env added to the
// environment, or "" when it can say its version.
func cannotRun(tool string, env []string) string {
	path, err := exec.LookPath(tool)
	if err != nil {
		return err.Error()
	}
	version := "--version"
	if tool == "go" {
		version = "version"
	}
	cmd := exec.Command(path, version)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("%s %s: %v: %s", tool, version, err, bytes.TrimSpace(out))
	}
	return ""
}

// mkWheel writes a wheel by hand (no setuptools or wheel package, no index
// needed), for pip to install offline.
const mkWheel = `import zipfile
w = zipfile.ZipFile("dshprobe-1.0-py3-none-any.whl", "w")
w.writestr("dshprobe.py", "X = 1\n")
w.writestr("dshprobe-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: dshprobe\nVersion: 1.0\n")
w.writestr("dshprobe-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
w.writestr("dshprobe-1.0.dist-info/RECORD", "")
w.close()
`
