//go:build linux

package execguard_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash/execguard"
	"github.com/dshgo/dsh/internal/proctest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		runHelper(name)
		return
	}
	proctest.QuickRaceExit()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// world is a directory with a stand-in for a denied program: zap, a copy
// of touch, which makes the files its arguments name.
type world struct {
	dir, bin string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{dir: t.TempDir()}
	w.bin = filepath.Join(w.dir, "bin")
	if err := os.Mkdir(w.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip("no touch")
	}
	if err := proctest.CopyProgram(touch, filepath.Join(w.bin, "zap")); err != nil {
		t.Fatal(err)
	}
	return w
}

// refuseZap refuses every exec of zap, by its path (argv[0] may say
// anything) or its file (a hard link to it under another name).
func (w *world) refuseZap(e execguard.Exec) string {
	var st syscall.Stat_t
	if filepath.Base(e.Path) == "zap" ||
		syscall.Stat(filepath.Join(w.bin, "zap"), &st) == nil && st.Ino == e.File.Ino && st.Dev == e.File.Dev {
		return "zap"
	}
	return ""
}

// result is how a traced bash -c ended.
type result struct {
	status   syscall.WaitStatus
	out      string
	refusals []execguard.Refusal
}

// run runs script with bash -c under the guard, in w.dir with w.bin
// first on PATH, and waits for every process of the tree to end.
func (w *world) run(t *testing.T, script string, check func(execguard.Exec) string) result {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var mu sync.Mutex
	var res result
	o := execguard.Options{Check: check, OnRefuse: func(f execguard.Refusal) {
		mu.Lock()
		res.refusals = append(res.refusals, f)
		mu.Unlock()
	}}
	env := []string{"PATH=" + w.bin + ":" + os.Getenv("PATH"), "HOME=" + w.dir, "LC_ALL=C"}
	self, _ := os.Executable()
	env = append(env, "SELF="+self)
	tr, err := execguard.Start(func() (int, error) {
		return syscall.ForkExec(bash, []string{"bash", "--noprofile", "--norc", "-c", script}, &syscall.ProcAttr{
			Dir: w.dir, Env: env, Files: []uintptr{0, wr.Fd(), wr.Fd()},
			Sys: &syscall.SysProcAttr{Ptrace: true, Setpgid: true}})
	}, o)
	wr.Close()
	if err != nil {
		t.Fatal(err)
	}
	outc := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r)
		outc <- b.String()
	}()
	select {
	case <-tr.Done():
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-tr.Pid(), syscall.SIGKILL)
		<-tr.Done()
		t.Fatalf("%q: the traced tree did not end within 20 s", script)
	}
	res.status = syscall.WaitStatus(tr.Wait())
	res.out = <-outc
	return res
}

func (w *world) exists(name string) bool {
	_, err := os.Stat(filepath.Join(w.dir, name))
	return err == nil
}

// TestRefusedAtAnyDepth: zap is refused however deep it is started, and
// the command goes on after the refusal.
func TestRefusedAtAnyDepth(t *testing.T) {
	tests := []struct{ name, script string }{
		{"direct", "zap made"},
		{"path", "$PWD/bin/zap made"},
		{"function", "f() { zap made; }; f"},
		{"subshell", "(zap made)"},
		{"exec-a", "(exec -a innocent zap made)"},
		{"sh-c", "sh -c 'zap made'"},
		{"env", "env zap made"},
		{"xargs", "echo made | xargs zap"},
		{"find-exec", "find . -maxdepth 0 -exec zap made ';'"},
		{"pipeline", "echo x | zap made | cat"},
		{"background", "zap made & wait"},
		{"nohup-setsid", "setsid sh -c 'zap made' </dev/null; sleep 0.2"},
		{"script-file", "printf '#!/bin/sh\\nzap made\\n' > s.sh; chmod +x s.sh; ./s.sh"},
		{"symlink", "ln -s bin/zap other; ./other made"},
		{"hardlink", "ln bin/zap other; ./other made"},
		{"go-os-exec", "$SELF_HELPER spawn zap made"},
		{"thread-exec", "$SELF_HELPER threadexec zap made"},
		{"make", "printf 'all:\\n\\tzap made\\n' > Makefile; make -s"},
		{"python-subprocess", "python3 -c 'import subprocess; subprocess.run([\"zap\", \"made\"])'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "make" {
				needProgram(t, "make")
			}
			if tc.name == "python-subprocess" {
				needProgram(t, "python3")
			}
			w := newWorld(t)
			script := strings.ReplaceAll(tc.script, "$SELF_HELPER", helperCmd())
			res := w.run(t, script+"; echo after", w.refuseZap)
			if w.exists("made") {
				t.Fatalf("zap ran: %q made its file (output %q)", tc.script, res.out)
			}
			if len(res.refusals) == 0 {
				t.Fatalf("no refusal reported (output %q)", res.out)
			}
			if f := res.refusals[0]; f.Rule != "zap" || f.Argv[len(f.Argv)-1] != "made" || !strings.HasPrefix(f.Path, w.dir) {
				t.Errorf("refusal %+v, want zap's path and argv", f)
			}
			if !strings.Contains(res.out, "after") {
				t.Errorf("the command did not go on after the refusal: %q", res.out)
			}
		})
	}
}

// TestAllowedRunsUnchanged: what the check allows runs as it would
// untraced: output, exit codes, signals, and a stop that does not hang.
func TestAllowedRunsUnchanged(t *testing.T) {
	tests := []struct {
		name, script, out string
		exit              int
		sig               syscall.Signal
	}{
		{"output", "echo hi; zip=1; echo $zip", "hi\n1\n", 0, 0},
		{"exit-code", "exit 3", "", 3, 0},
		{"signal-death", "kill -TERM $$", "", 0, syscall.SIGTERM},
		{"trap", "trap 'echo got' USR1; kill -USR1 $$; echo done", "got\ndone\n", 0, 0},
		{"children", "for i in 1 2 3; do /bin/echo $i; done | sort -r", "3\n2\n1\n", 0, 0},
		{"stop-and-continue", "rm -f up; sh -c ': > up; kill -STOP $$; echo resumed' & p=$!; " +
			"until test -e up && grep -q '^State:.*stop' /proc/$p/status; do :; done; echo stopped; kill -CONT $p; wait $p",
			"stopped\nresumed\n", 0, 0},
		{"zap-allowed", "zap made && echo made", "made\n", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			res := w.run(t, tc.script, func(execguard.Exec) string { return "" })
			if res.out != tc.out {
				t.Errorf("output %q, want %q", res.out, tc.out)
			}
			switch {
			case tc.sig != 0 && (!res.status.Signaled() || res.status.Signal() != tc.sig):
				t.Errorf("status %#x, want death by %v", uint32(res.status), tc.sig)
			case tc.sig == 0 && res.status.ExitStatus() != tc.exit:
				t.Errorf("exit %d, want %d", res.status.ExitStatus(), tc.exit)
			}
			if len(res.refusals) != 0 {
				t.Errorf("refusals %+v", res.refusals)
			}
		})
	}
}

// TestRaceArgv: a program that rewrites the argv it passes to execve
// from another thread while the kernel reads it cannot run a denied argv:
// the check reads the argv the new image got, which nothing can change.
// Without the guard the denied argv runs in most tries.
func TestRaceArgv(t *testing.T) {
	w := newWorld(t)
	tries := 200
	if proctest.Race {
		tries = 10 // a race-built helper takes ten times as long to start
	}
	script := fmt.Sprintf("for i in $(seq %d); do %s raceexec \"$PWD/bin/zap\" ok-$i no-$i; done; echo after", tries, helperCmd())
	res := w.run(t, script, func(e execguard.Exec) string {
		if filepath.Base(e.Path) != "zap" {
			return ""
		}
		for _, a := range e.Argv[1:] {
			if strings.HasPrefix(a, "no-") {
				return "no-*"
			}
		}
		return ""
	})
	var ran, refused int
	for i := 1; i <= tries; i++ {
		if w.exists(fmt.Sprintf("no-%d", i)) {
			ran++
		}
	}
	refused = len(res.refusals)
	t.Logf("%d tries: %d refused, %d allowed", tries, refused, tries-refused)
	if ran > 0 {
		t.Fatalf("a denied argv ran in %d of %d tries", ran, tries)
	}
	if !strings.HasSuffix(res.out, "after\n") {
		t.Errorf("output %q", res.out)
	}
}

func needProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("no %s", name)
	}
}
