//go:build linux

package remote

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"testing"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/servetest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
)

var updateTranscript = flag.Bool("update", false, "rewrite toolbash/toolbashtest/testdata/transcript.txtar")

// serveEnv, set, makes the test binary a server: it serves a local
// executor with the options it holds (JSON) on its stdin and stdout.
const serveEnv = "DSH_REMOTE_TEST_SERVE"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(serveEnv); cfg != "" {
		os.Exit(serveForTest(cfg))
	}
	if len(os.Args) == 3 && os.Args[1] == "executor" {
		// Run as "dsh-bash executor CONFIG", as an uploaded binary is.
		os.Exit(serveForTest(os.Args[2]))
	}
	proctest.QuickRaceExit()
	proctest.RaiseParallel(4)
	code := m.Run()
	servetest.RemoveFarside()
	os.Exit(code)
}

func serveForTest(cfg string) int {
	return servetest.Main(cfg, func(ctx context.Context, rwc io.ReadWriteCloser, e bash.Executor, containment string) error {
		return Serve(ctx, rwc, e, &ServeOptions{Containment: containment})
	})
}

// serverConfig is the suite's Config for a server process, with the spill
// directory.
type serverConfig = servetest.Config

// localOptions maps the suite's knobs onto the far side's executor.
func localOptions(t *testing.T, c bashtest.Config) *local.Options {
	return serverConfig{Config: c, SpillDir: t.TempDir()}.Options()
}

// pipePair is two pipes: the client's end and the server's end of one
// stream.
func pipePair(t testing.TB) (client, server io.ReadWriteCloser) {
	cr, sw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return &pipeEnd{cr, cw}, &pipeEnd{sr, sw}
}

type pipeEnd struct{ r, w *os.File }

func (p *pipeEnd) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeEnd) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeEnd) Close() error {
	p.w.Close()
	return p.r.Close()
}

// servePipe serves a new local executor with opts in this process over a
// pair of pipes. It returns the client's end, the server's end, and a
// channel closed once Serve has returned.
func servePipe(t testing.TB, opts *local.Options) (cli, srv io.ReadWriteCloser, done chan struct{}, err error) {
	le, err := local.New(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	cli, srv = pipePair(t)
	done = make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(context.Background(), srv, le, nil)
	}()
	return cli, srv, done, nil
}

// served is a client whose server runs in this process: its Close also
// waits for Serve to return, within testwait.Limit.
type served struct {
	*Executor
	done chan struct{}
}

func (s *served) Close() error {
	err := s.Executor.Close()
	if _, werr := testwait.Wait(s.done, "return of Serve once its client closed"); err == nil {
		err = werr
	}
	return err
}

// overPipe serves a local executor in this process over a pair of pipes.
func overPipe(t *testing.T, c bashtest.Config) bash.Executor {
	return servedPipe(t, localOptions(t, c))
}

// servedPipe is a client of a local executor with opts served in this
// process over a pair of pipes.
func servedPipe(t testing.TB, opts *local.Options) *served {
	cli, _, done, err := servePipe(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	e, err := testwait.Reply("hello over pipes", func(ctx context.Context) (*Executor, error) {
		return New(ctx, cli, &Options{Host: "pipe"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return &served{e, done}
}

// dialT dials with opts; the test fails if that fails or takes longer
// than testwait.Limit.
func dialT(t testing.TB, dial DialFunc, opts *Options) *Executor {
	t.Helper()
	e, err := testwait.Reply("hello of "+opts.host(), func(ctx context.Context) (*Executor, error) {
		return Dial(ctx, dial, opts)
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// overProcess serves a local executor from a subprocess (this test binary
// again), dialled as `--executor-cmd` would.
func overProcess(t *testing.T, c bashtest.Config) bash.Executor {
	cfg, err := json.Marshal(serverConfig{Config: c, SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cmd := &Command{Argv: []string{os.Args[0]}, Env: append(os.Environ(), serveEnv+"="+string(cfg)), Stderr: os.Stderr}
	return dialT(t, cmd.Dial, &Options{Host: "subprocess"})
}

// TestConformance runs the executor contract of package bash against the
// remote executor over pipes to a server in this process. Over the stdio
// of a server process it runs in TestSSHConformance (sshd starts that
// process), and the process transport alone has its transcript here
// (TestTranscript): running the whole contract a fourth time cost CI
// a quarter of a minute and found nothing the SSH run does not.
func TestConformance(t *testing.T) {
	t.Parallel()
	bashtest.Run(t, overPipe)
}

// TestTranscript checks that the model reads the same bytes through the
// remote executor as through the local one.
func TestTranscript(t *testing.T) {
	t.Parallel()
	t.Run("pipe", func(t *testing.T) {
		if !*updateTranscript { // the process run compares with the file written
			t.Parallel()
		}
		toolbashtest.Transcript(t, overPipe, "../../toolbash/toolbashtest/testdata/transcript.txtar", *updateTranscript)
	})
	t.Run("process", func(t *testing.T) {
		t.Parallel()
		toolbashtest.Transcript(t, overProcess, "../../toolbash/toolbashtest/testdata/transcript.txtar", false)
	})
}
