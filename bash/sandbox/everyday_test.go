//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
)

// TestEverydayWork runs, inside the jail with the default policy, the work
// agents do all day: each toolchain the machine has builds or installs in
// the workspace, with its caches in the home directory writable. Users of
// other sandboxes complain most about these breaking.
func TestEverydayWork(t *testing.T) {
	cases := []struct {
		name, tool string
		files      map[string]string
		cmd        string
	}{
		{"go build and test", "go", map[string]string{
			"go.mod":        "module example.com/m\n\ngo 1.21\n",
			"m.go":          "package m\n\nfunc Two() int { return 2 }\n",
			"m_test.go":     "package m\n\nimport \"testing\"\n\nfunc TestTwo(t *testing.T) { if Two() != 2 { t.Fatal() } }\n",
			"cmd/x/main.go": "package main\n\nfunc main() { println(\"built\") }\n",
		}, "go build ./... && go test -count=1 ./... && go run ./cmd/x"},
		{"git commit", "git", map[string]string{"a.txt": "a\n"},
			"git init -q . && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline | wc -l"},
		{"npm install", "npm", map[string]string{
			"package.json":     `{"name":"app","version":"1.0.0","dependencies":{"lib":"file:./lib"}}`,
			"lib/package.json": `{"name":"lib","version":"1.0.0","main":"index.js"}`,
			"lib/index.js":     "module.exports = 42;\n",
		}, "npm install --offline --no-audit --no-fund >/dev/null && node -e 'console.log(require(\"lib\"))'"},
		{"pip install --user", "pip3", map[string]string{"mkwheel.py": mkWheel},
			"py=$(python3 -c 'import sys; print(sys.executable)') && $py mkwheel.py && " +
				// A distribution's Python (PEP 668) refuses --user installs
				// unless told: what an agent does there too.
				"managed=$($py -c 'import sysconfig, os; print(os.path.exists(os.path.join(sysconfig.get_path(\"stdlib\"), \"EXTERNALLY-MANAGED\")) and \"--break-system-packages\" or \"\")') && " +
				"$py -m pip install -q --user $managed --disable-pip-version-check --no-index dshprobe-1.0-py3-none-any.whl && cd / && $py -c 'import dshprobe; print(dshprobe.X)'"},
		{"cargo build", "cargo", map[string]string{
			"Cargo.toml":  "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
			"src/main.rs": "fn main() { println!(\"built\"); }\n",
		}, "cargo build --offline -q && ./target/debug/probe"},
	}
	home, _ := os.UserHomeDir()
	e, err := newSandbox(t, &Options{Local: &local.Options{Env: []string{"HOME=" + home}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.tool); err != nil {
				t.Skipf("%s is not on this machine", c.tool)
			}
			ws := t.TempDir()
			t.Cleanup(func() { // what pip install --user put in the real home
				left, _ := filepath.Glob(filepath.Join(home, ".local/lib/python*/site-packages/dshprobe*"))
				for _, p := range left {
					os.RemoveAll(p)
				}
			})
			for name, body := range c.files {
				os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755)
				os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644)
			}
			ctx := context.Background()
			spec, _ := e.Resolve(ctx, bash.ExecRequest{Command: c.cmd, Owner: c.name, Workspace: ws, Workdir: ws, Timeout: 5 * time.Minute})
			res, err := e.Run(ctx, spec)
			if err != nil || res.ExitCode != 0 {
				t.Errorf("%v, exit %d\nstdout: %s\nstderr: %s", err, res.ExitCode, res.Stdout.Text, res.Stderr.Text)
			}
		})
	}
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
