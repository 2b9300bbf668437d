//go:build linux

package remote

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
)

// TestFleetOverSSH: three sshd "hosts" on loopback. Sessions spread over
// them; one host's sshd is killed while its session runs a task: that
// session gets errors naming the host, the others keep working; the host
// is restarted and used again, by its session and by a new one.
func TestFleetOverSSH(t *testing.T) {
	t.Parallel()
	proctest.Long(t)
	servers, f := sshFleet(t, 3)
	tags := map[string]string{}
	tasks := map[string]bash.TaskID{}
	fifo := t.TempDir() + "/s2.pid"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		cmd := "exec sleep 300"
		if s == "s2" {
			cmd = "echo $$ > " + fifo + "; " + cmd
		}
		tasks[s] = start(t, f, resolve(t, f, cmd, s)).ID
		tags[s] = fleetRun(t, f, s, "echo $HOST_TAG")
	}
	if tags["s1"] == tags["s2"] || tags["s2"] == tags["s3"] || tags["s1"] == tags["s3"] {
		t.Fatalf("three sessions did not spread over three hosts: %v", tags)
	}
	victim := servers[tagIndex(t, tags["s2"])]
	victimTask := proctest.PidFromFIFO(t, fifo)
	victim.Kill()
	if err := proctest.WaitExit(victimTask, 10*time.Second); err != nil {
		t.Errorf("the dead host's task outlived its connection: %v", err)
	}

	_, err := testwait.Reply("Get", func(ctx context.Context) (bash.Task, error) { return f.Get(ctx, tasks["s2"]) })
	var le *bash.LinkError
	if !errors.As(err, &le) || le.Task != tasks["s2"] || le.Host != victim.name() {
		t.Errorf("Get of a task on the dead host: %v, want a *bash.LinkError naming %s and %s", err, tasks["s2"], victim.name())
	}
	_, err = testwait.Reply("Resolve", func(ctx context.Context) (bash.ExecSpec, error) {
		return f.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "s2"})
	})
	if !errors.As(err, &le) || le.Host != victim.name() {
		t.Errorf("a new call of the dead host's session: %v, want a *bash.LinkError naming %s", err, victim.name())
	}
	for _, s := range []string{"s1", "s3"} {
		if got := fleetRun(t, f, s, "echo $HOST_TAG"); got != tags[s] {
			t.Errorf("session %s on a healthy host: %q, want %q", s, got, tags[s])
		}
		task, err := testwait.Reply("Get", func(ctx context.Context) (bash.Task, error) { return f.Get(ctx, tasks[s]) })
		if err != nil || task.Status != bash.StatusRunning {
			t.Errorf("session %s's task: %+v, %v", s, task, err)
		}
	}
	victim.Restart()
	if got := eventuallyRun(t, f, "s2", "echo $HOST_TAG"); got != tags["s2"] {
		t.Errorf("the restarted host's session ran on %q, want %q", got, tags["s2"])
	}
	if got := fleetRun(t, f, "s4", "echo $HOST_TAG"); got != tags["s2"] {
		t.Errorf("a new session went to %q; want the restarted host %q, which runs no task", got, tags["s2"])
	}
}

// fleetServer is one sshd host of a fleet test.
type fleetServer struct {
	*sshd
	d *SSH
}

func (s *fleetServer) name() string { return s.d.Name() }

// sshFleet starts n sshd hosts, each serving this test binary with
// HOST_TAG=hN in its commands' environment, and a fleet over them.
func sshFleet(t *testing.T, n int) ([]*fleetServer, *Fleet) {
	t.Helper()
	var servers []*fleetServer
	var hosts []Host
	for i := 0; i < n; i++ {
		s := startSSHD(t)
		c := bashtest.Config{Cwd: t.TempDir(), Timeout: 20 * time.Second, MaxTimeout: time.Minute,
			Grace: 200 * time.Millisecond, DrainDelay: 100 * time.Millisecond, MaxOutputBytes: 4096,
			MaxTasksPerOwner: 8, MaxTasks: 16, Env: []string{fmt.Sprintf("HOST_TAG=h%d", i)}}
		fs := &fleetServer{sshd: s, d: s.dialer(serveCommand(t, c))}
		fs.d.Stderr = nil
		servers = append(servers, fs)
		hosts = append(hosts, Host{Dial: fs.d.Dial, Options: Options{Host: fs.d.Name(), Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}})
	}
	f, err := NewFleet(hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return servers, f
}

func tagIndex(t *testing.T, tag string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(tag, "h"))
	if err != nil {
		t.Fatalf("tag %q", tag)
	}
	return i
}

// fleetRun runs cmd for owner and returns its stdout, trimmed.
func fleetRun(t *testing.T, f *Fleet, owner, cmd string) string {
	t.Helper()
	res, err := runSpec(f, resolve(t, f, cmd, owner))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(res.Stdout.Text)
}

// eventuallyRun runs cmd for owner once its host answers again (the fleet
// backs off between attempts to reconnect).
func eventuallyRun(t *testing.T, f *Fleet, owner, cmd string) string {
	t.Helper()
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		var spec bash.ExecSpec
		spec, err = testwait.Reply("Resolve", func(ctx context.Context) (bash.ExecSpec, error) {
			return f.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: owner})
		})
		if err != nil {
			time.Sleep(5 * time.Millisecond) // nothing announces that a host is back
			continue
		}
		res, err := runSpec(f, spec)
		if err == nil {
			return strings.TrimSpace(res.Stdout.Text)
		}
		time.Sleep(5 * time.Millisecond) // nothing announces that a host is back
	}
	t.Fatalf("the host never answered again: %v", err)
	return ""
}
