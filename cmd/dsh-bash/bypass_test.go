//go:build linux

package main

import (
	"cmp"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/proctest"
)

// bypass is a command that the old built-in rules allowed and that runs a
// stand-in program (./x, which leaves the file RAN), writes a file
// outside what the command names (marker), or changes the repository.
type bypass struct {
	name   string
	needs  string                         // the program it needs, skipped without it (except under CI)
	setup  func(t *testing.T, dir string) // besides the stand-in and a.txt
	cmd    string
	marker string // the file whose existence shows the effect; default RAN
	gone   string // instead: a file whose removal shows it
	// outside, instead: the effect is the file written in outsideOf(dir)
	outside string
}

var bypasses = []bypass{
	{name: "rg --pre", needs: "rg", cmd: "rg --pre ./x hello a.txt"},
	{name: "rg --pre=", needs: "rg", cmd: "rg --pre=./x hello a.txt"},
	{name: "sort --compress-program", cmd: "seq 30000 > big; sort --compress-program=./x -S 64K big > /dev/null"},
	{name: "go vet -vettool", needs: "go", setup: goModule, cmd: "go vet -vettool=$PWD/x ."},
	{name: "find -exec", cmd: "find a.txt -exec ./x {} ';'"},
	{name: "find -fprint", cmd: "find a.txt -fprint written", marker: "written"},
	{name: "sed e", cmd: "sed -n '1e ./x' a.txt"},
	{name: "sed s///w", cmd: "sed 's/hello/bye/w written' a.txt", marker: "written"},
	{name: "sort -o", cmd: "sort -o written a.txt", marker: "written"},
	{name: "uniq IN OUT", cmd: "uniq a.txt written", marker: "written"},
	{name: "tree -o", needs: "tree", cmd: "tree -o written", marker: "written"},
	{name: "git log --output", needs: "git", setup: gitRepo, cmd: "git log --output=written", marker: "written"},
	{name: "git branch -D", needs: "git", setup: gitRepo, cmd: "git branch -D feature", gone: ".git/refs/heads/feature"},
	{name: "go env -w", needs: "go", cmd: "go env -w GOFLAGS=-x", marker: "goenv"},
	{name: "set -k", needs: "git", setup: gitRepo, cmd: "echo changed >> a.txt; set -k; git diff GIT_EXTERNAL_DIFF=./x"},
	{name: "write through a link", setup: linkOut, cmd: "echo x > link", outside: "written"},
}

// TestBypassesNeverRun: each bypass, run by plain bash, has its effect
// (so the test can tell); run by dsh-bash run with the built-in rules,
// it is asked about (a denial without a terminal) and has none.
func TestBypassesNeverRun(t *testing.T) {
	t.Parallel()
	for _, b := range bypasses {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(b.needs); b.needs != "" && err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed, and .ci/run installs it", b.needs)
				}
				t.Skipf("%s is not installed", b.needs)
			}
			viaBash := bypassDir(t, b)
			cmd := exec.Command("bash", "-c", b.cmd)
			cmd.Dir, cmd.Env = viaBash, bypassEnv(viaBash)
			out, _ := cmd.CombinedOutput()
			if !b.happened(viaBash) {
				t.Fatalf("run by bash, %q had no effect: the test cannot tell (output %q)", b.cmd, out)
			}
			viaDsh := bypassDir(t, b)
			got, _, code := runBinary(t, binary, viaDsh, bypassEnv(viaDsh), "run", "--allow", "true", "--default", "ask", "--", b.cmd)
			if b.happened(viaDsh) || code != 1 || !strings.Contains(got, "needs the user's approval") {
				t.Errorf("run by dsh-bash with the built-in rules: effect %v, exit %d, %q", b.happened(viaDsh), code, got)
			}
		})
	}
}

// TestDevTCPNeverConnects: reading from bash's /dev/tcp connects (plain
// bash) and is asked about (dsh-bash run with a rule), even where a
// command no rule matches runs (run's default): it cannot be known
// statically.
func TestDevTCPNeverConnects(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	cmd := "cat < /dev/tcp/" + strings.Replace(ln.Addr().String(), ":", "/", 1)
	got, _, code := dshBash(t, t.TempDir(), "run", "--allow", "true", "--", cmd)
	if code != 1 || !strings.Contains(got, "needs the user's approval") {
		t.Errorf("dsh-bash run: exit %d, %q", code, got)
	}
	if out, err := exec.Command("bash", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("plain bash: %v (%s)", err, out)
	}
	// bash's connection was accepted (it returned); dsh-bash's was not.
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("plain bash did not connect: the test cannot tell")
	}
	select {
	case <-accepted:
		t.Error("a second connection: dsh-bash's command connected")
	default:
	}
}

// bypassDir is a directory with the stand-in ./x, a.txt and b's setup.
func bypassDir(t *testing.T, b bypass) string {
	dir := t.TempDir()
	script := "#!/bin/sh\ntouch " + filepath.Join(dir, "RAN") + "\ncat \"$@\" 2>/dev/null\n"
	if err := proctest.WriteProgram(filepath.Join(dir, "x"), []byte(script)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644)
	if b.setup != nil {
		b.setup(t, dir)
	}
	return dir
}

// bypassEnv keeps the commands' homes and Go's settings in dir.
func bypassEnv(dir string) []string {
	return append(os.Environ(), "HOME="+dir, "GOENV="+filepath.Join(dir, "goenv"), "GOFLAGS=", "GIT_CONFIG_NOSYSTEM=1")
}

// happened reports whether b had its effect in dir.
func (b bypass) happened(dir string) bool {
	if b.outside != "" {
		_, err := os.Stat(filepath.Join(outsideOf(dir), b.outside))
		return err == nil
	}
	if b.gone != "" {
		_, err := os.Stat(filepath.Join(dir, b.gone))
		return err != nil
	}
	_, err := os.Stat(filepath.Join(dir, cmp.Or(b.marker, "RAN")))
	return err == nil
}

// goModule makes dir a Go module with one package.
func goModule(t *testing.T, dir string) {
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module m\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "m.go"), []byte("package m\n"), 0o644)
}

// gitRepo makes dir a repository with a commit of a.txt and a branch
// named feature.
func gitRepo(t *testing.T, dir string) {
	for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt"}, {"commit", "-qm", "a"}, {"branch", "feature"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir, cmd.Env = dir, bypassEnv(dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v (%s)", args, err, out)
		}
	}
}

// outsideOf is a directory beside dir, outside the workspace dir is
// (and removed with it: both are in the test's temporary directory).
func outsideOf(dir string) string { return dir + ".outside" }

// linkOut makes dir/link point at a file to be in outsideOf(dir).
func linkOut(t *testing.T, dir string) {
	if err := os.Mkdir(outsideOf(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(outsideOf(dir), "written"), filepath.Join(dir, "link"))
}
