package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/permission"
)

// TestDenyTravels: the deny rules a client gives travel in the handshake
// and the far side enforces them at exec; a far side that cannot refuses
// the handshake rather than run without them.
func TestDenyTravels(t *testing.T) {
	dir := t.TempDir()
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip("no touch")
	}
	if err := proctest.CopyProgram(touch, filepath.Join(dir, "zap")); err != nil {
		t.Fatal(err)
	}
	le, err := local.New(&local.Options{Cwd: dir, Env: []string{"PATH=" + dir + ":" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	serve := func(o *ServeOptions) (*Executor, chan struct{}, error) {
		cli, srv := pipePair(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = Serve(context.Background(), srv, le, o)
		}()
		e, err := testwait.Reply("hello over pipes", func(ctx context.Context) (*Executor, error) {
			return New(ctx, cli, &Options{Host: "pipe", Deny: []string{"zap"}})
		})
		if err != nil {
			cli.Close()
		}
		return e, done, err
	}
	e, done, err := serve(&ServeOptions{SetDeny: func(deny []string) error {
		got = deny
		r, err := permission.NewExecRules(deny, dir)
		le.SetExecRules(r)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := e.Resolve(context.Background(), bash.ExecRequest{Command: "zap made; echo after", Workdir: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err == nil || len(res.Refused) != 1 || res.Refused[0].Rule != "zap" {
		t.Errorf("far side ran zap or did not say: Refused %+v, stat %v, rules %q", res.Refused, err, got)
	}
	e.Close()
	<-done

	_, done, err = serve(nil)
	if err == nil || !strings.Contains(err.Error(), "cannot enforce deny rules") {
		t.Errorf("a far side without SetDeny took deny rules: %v", err)
	}
	<-done
	le.Close()
}
