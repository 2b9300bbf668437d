//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/internal/pairbench"
	"github.com/dshgo/dsh/permission"
)

// guardPair makes two executors in dir, alike but for the exec check:
// unchecked has no deny rules, checked has some that the benchmark's
// programs do not match (so that every exec is checked and let through).
func guardPair(b *testing.B, dir string, env ...string) (unchecked, checked *Executor) {
	b.Helper()
	rules, err := permission.NewExecRules([]string{"zap", "git push --force", "rm -rf /", "curl *"}, os.Getenv("PATH"))
	if err != nil {
		b.Fatal(err)
	}
	env = append(env, "PATH="+os.Getenv("PATH"), "HOME="+dir)
	unchecked = newExec(b, &Options{Cwd: dir, Env: env, MaxTimeout: 1 << 40})
	checked = newExec(b, &Options{Cwd: dir, Env: env, MaxTimeout: 1 << 40, ExecRules: rules})
	return unchecked, checked
}

// runner runs cmd on e and fails the benchmark unless it exits 0.
func runner(e *Executor, cmd string) func(*testing.B) {
	spec, err := e.Resolve(context.Background(), bash.ExecRequest{Command: cmd})
	return func(b *testing.B) {
		if err != nil {
			b.Fatal(err)
		}
		res, err := e.Run(context.Background(), spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%q: %v, exit %d: %s%s", cmd, err, res.ExitCode, res.Stdout.Text, res.Stderr.Text)
		}
	}
}

// BenchmarkExecLoop: a shell loop that forks and runs /bin/true 500
// times, with and without the exec check, alternating in one loop so
// that noise hits both alike. It reports each one's time per exec and
// what the check adds to each; and, where strace is installed, what a C
// tracer that stops at the same events adds (strace -f with a seccomp
// filter for execve only, its output thrown away): what any ptrace-based
// check costs on this machine.
func BenchmarkExecLoop(b *testing.B) {
	const n = 500
	dir := b.TempDir()
	u, c := guardPair(b, dir)
	cmd := fmt.Sprintf("for i in $(seq %d); do /bin/true; done", n)
	ru, rc := runner(u, cmd), runner(c, cmd)
	rs := func(*testing.B) {}
	strace, err := exec.LookPath("strace")
	if err == nil {
		rs = runner(u, strace+" -f --seccomp-bpf -qq -e trace=execve -e signal=none -o /dev/null bash -c "+permission.QuoteWord(cmd))
	}
	var tu, tc, ts time.Duration
	for b.Loop() {
		t0 := time.Now()
		ru(b)
		t1 := time.Now()
		rc(b)
		t2 := time.Now()
		rs(b)
		tu, tc, ts = tu+t1.Sub(t0), tc+t2.Sub(t1), ts+time.Since(t2)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*n) }
	b.ReportMetric(per(tu), "unchecked-us/exec")
	b.ReportMetric(per(tc), "checked-us/exec")
	b.ReportMetric(per(tc-tu), "added-us/exec")
	if err == nil {
		b.ReportMetric(per(ts-tu), "strace-added-us/exec")
	}
}

// BenchmarkBuild: a small build with and without the exec check, in one
// loop: make with 200 tiny rules (each a shell and a program), and go
// build of a hello world whose main changes each time (a compile and a
// link, from a warm cache).
func BenchmarkBuild(b *testing.B) {
	b.Run("make", func(b *testing.B) {
		if _, err := exec.LookPath("make"); err != nil {
			b.Skip("no make")
		}
		dir := b.TempDir()
		writeMakefile(b, dir, 200)
		u, c := guardPair(b, dir)
		cmd := "make -s -B all"
		pairbench.Run(b, "unchecked", runner(u, cmd), "checked", runner(c, cmd))
	})
	b.Run("go", func(b *testing.B) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			b.Skip("no go")
		}
		dir := b.TempDir()
		write(b, filepath.Join(dir, "go.mod"), "module hello\n\ngo 1.22\n")
		u, c := guardPair(b, dir, "GOCACHE="+filepath.Join(dir, ".cache"), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
			"GOROOT="+strings.TrimSpace(output(b, goBin, "env", "GOROOT")))
		n := 0 // one count for both: each build compiles a new main
		build := func(e *Executor) func(*testing.B) {
			return func(b *testing.B) {
				n++
				write(b, filepath.Join(dir, "main.go"), fmt.Sprintf("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(%d) }\n", n))
				runner(e, goBin+" build -o hello .")(b)
			}
		}
		// Warm the cache: fmt and what it needs are compiled once.
		write(b, filepath.Join(dir, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println() }\n")
		runner(u, goBin+" build -o hello .")(b)
		pairbench.Run(b, "unchecked", build(u), "checked", build(c))
	})
}

func writeMakefile(b *testing.B, dir string, n int) {
	var mk strings.Builder
	mk.WriteString("all:")
	for i := range n {
		fmt.Fprintf(&mk, " t%d", i)
	}
	mk.WriteString("\n")
	for i := range n {
		fmt.Fprintf(&mk, "t%d:\n\t@printf x > %s/out-%d\n", i, dir, i)
	}
	write(b, filepath.Join(dir, "Makefile"), mk.String())
}

func write(b *testing.B, path, s string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
}

func output(b *testing.B, name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		b.Fatal(err)
	}
	return string(out)
}

// BenchmarkCallChecked: one call of `true` with and without the exec
// check, alternating: what tracing a command costs it whole (a tracer
// thread, its seccomp filter and Landlock domain, the seize).
func BenchmarkCallChecked(b *testing.B) {
	u, c := guardPair(b, b.TempDir())
	pairbench.Run(b, "unchecked", runner(u, "true"), "checked", runner(c, "true"))
}
