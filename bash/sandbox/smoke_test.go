//go:build linux

package sandbox

import (
	"context"
	"os"
	"testing"

	"github.com/dshgo/dsh/bash"
)

func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	e, err := New(ctx, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, cmd := range []string{"echo hi; id; pwd; echo $$; cat /proc/1/cmdline | tr '\\0' ' '; echo", "ls /tmp; touch /tmp/x; ls /tmp; touch /etc/x; touch " + ws + "/ok && echo wrote", "grep -i cap /proc/self/status; grep Seccomp /proc/self/status", "kill -TERM $$", "unshare -U true; echo $?; unshare -m true; echo $?", "ls /run /sys/fs/cgroup ~/.ssh 2>&1 | head", "sleep 100 & echo bg"} {
		spec, err := e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: "a", Workspace: ws, Workdir: ws})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(ctx, spec)
		t.Logf("%q: err=%v code=%d sig=%s adopted=%s\nstdout:\n%s\nstderr:\n%s", cmd, err, res.ExitCode, res.Signal, res.Adopted, res.Stdout.Text, res.Stderr.Text)
	}
}
