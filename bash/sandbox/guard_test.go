package sandbox

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
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/permission"
	"golang.org/x/sys/unix"
)

// TestExecRulesInJail: with deny rules, each layer's agent traces every
// process of the session and refuses a denied program at its exec, at
// any depth; the result says which. A process of the session cannot
// write another's memory (which could rewrite an argv after its check),
// and what is allowed runs as before.
func TestExecRulesInJail(t *testing.T) {
	t.Parallel()
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		t.Run(layer.String(), func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			bin := filepath.Join(ws, "bin")
			touch, err := exec.LookPath("touch")
			if err != nil {
				t.Skip("no touch")
			}
			os.Mkdir(bin, 0o755)
			if err := proctest.CopyProgram(touch, filepath.Join(bin, "zap")); err != nil {
				t.Fatal(err)
			}
			rules, err := permission.NewExecRules([]string{"zap"}, bin)
			if err != nil {
				t.Fatal(err)
			}
			env := []string{"PATH=" + bin + ":/usr/bin:/bin"}
			e, err := newSandbox(t, &Options{Layer: layer, Local: &local.Options{Env: env, ExecRules: rules}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			run := func(cmd string) bash.RunResult {
				t.Helper()
				ctx := context.Background()
				spec, err := e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: "o", Workspace: ws, Workdir: ws, Timeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Run(ctx, spec)
				if err != nil {
					t.Fatalf("%q: %v", cmd, err)
				}
				return res
			}
			res := run("echo made | xargs zap; sh -c 'cp bin/zap other; ./other made2'; echo after")
			for _, f := range []string{"made", "made2"} {
				if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
					t.Errorf("zap ran: %s was made", f)
				}
			}
			if len(res.Refused) != 2 || res.Refused[0].Rule != "zap" || res.Refused[1].Argv[0] != "./other" {
				t.Errorf("Refused %+v", res.Refused)
			}
			if !strings.Contains(res.Stdout.Text, "after") {
				t.Errorf("stdout %q", res.Stdout.Text)
			}
			// A child its tracer is not told of (clone with CLONE_UNTRACED,
			// clone3) cannot be started.
			for name, script := range proctest.UntracedClones("untraced") {
				run("perl -e " + permission.QuoteWord(script))
				if _, err := os.Stat(filepath.Join(ws, "untraced")); err == nil {
					t.Errorf("%s: zap ran untraced", name)
				}
			}
			// The primitive of a rewrite: another process's memory.
			res = run("sleep 5 & p=$!; " +
				"printf x | dd of=/proc/$p/mem bs=1 seek=4096 conv=notrunc 2>&1 | head -1; kill $p; " +
				"ok=$(sh -c 'echo allowed; exit 3'; echo $?); echo $ok")
			t.Logf("memory write: %q", res.Stdout.Text)
			if strings.Contains(res.Stdout.Text, "records out") || !strings.Contains(res.Stdout.Text, "allowed 3") {
				t.Errorf("memory write or allowed commands: %q", res.Stdout.Text)
			}
			// Job control under the agent's tracer: a stop is kept until
			// SIGCONT, and a stopped tree is killed all the same.
			res = run("rm -f up; sh -c ': > up; kill -STOP $$; echo resumed' & p=$!; " +
				"until test -e up && grep -q '^State:.*stop' /proc/$p/status; do :; done; echo stopped; kill -CONT $p; wait $p; " +
				"sleep 30 & q=$!; kill -STOP $q; kill -KILL $q; wait $q; echo killed $?")
			if res.Stdout.Text != "stopped\nresumed\nkilled 137\n" {
				t.Errorf("job control under the tracer: %q", res.Stdout.Text)
			}
		})
	}
}

// TestNoTracingWithoutRules: a jail whose agent does not trace (no deny
// rules) refuses every ptrace, PTRACE_TRACEME included, as before the
// exec check: its filter lets a jail's processes trace nothing.
func TestNoTracingWithoutRules(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl")
	}
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		t.Run(layer.String(), func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			e, err := newSandbox(t, &Options{Layer: layer, Local: &local.Options{}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			ctx := context.Background()
			script := fmt.Sprintf(`$r = syscall(%d, %d, 0, 0, 0); print $r == 0 ? "traced\n" : "refused: $!\n";`, unix.SYS_PTRACE, unix.PTRACE_TRACEME)
			spec, err := e.Resolve(ctx, bash.ExecRequest{Command: "perl -e " + permission.QuoteWord(script), Owner: "o", Workspace: ws, Workdir: ws, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(ctx, spec)
			if err != nil || res.Stdout.Text != "refused: Operation not permitted\n" {
				t.Errorf("PTRACE_TRACEME in a jail without deny rules: %q, %v", res.Stdout.Text, err)
			}
		})
	}
}
