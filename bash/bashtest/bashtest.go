//go:build linux

package bashtest

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
)

// Config holds the knobs the suite needs; a NewFunc maps them onto its
// executor's own options. Every field is set (Cwd may be empty: then the
// executor has no configured default and uses its process's cwd).
type Config struct {
	// Cwd is the default working directory: a fresh t.TempDir.
	Cwd string
	// Timeout is the default foreground timeout, MaxTimeout its cap.
	Timeout, MaxTimeout time.Duration
	// Grace is how long SIGTERM is given before SIGKILL.
	Grace time.Duration
	// DrainDelay is how long a foreground run waits, after its shell
	// exited, before it adopts the processes left behind.
	DrainDelay time.Duration
	// MaxOutputBytes is how much of each stream the executor keeps in
	// memory; a longer stream is cut (its head) and spilled to a file.
	MaxOutputBytes int
	// MaxTasksPerOwner and MaxTasks limit running background tasks, per
	// owner token and in all.
	MaxTasksPerOwner, MaxTasks int
	// Env holds extra NAME=value entries for every command's environment;
	// the suite puts a marker there that finds the commands' processes.
	Env []string
}

// NewFunc makes the executor under test. It fails the test (t.Fatal) when
// it cannot. The suite closes the executor and checks Close.
type NewFunc func(t *testing.T, c Config) bash.Executor

// An Option tells the suite of a limit the executor documents.
type Option func(*options)

type options struct {
	setsidEscapes bool
	teardown      time.Duration // how long a closed executor's goroutines may take to end; 0: leakBound
}

// SetsidEscapes says that a process which leaves the command's session with
// setsid is beyond the executor's reach (it contains commands in process
// groups): the suite skips the checks that Kill and Close stop such a
// process, and says so.
func SetsidEscapes() Option { return func(o *options) { o.setsidEscapes = true } }

// Teardown says how long the goroutines of a closed executor may take to
// end, where its transport takes longer than leakBound to tear a stream
// down after Close returned (an exec stream into a pod that the API
// server closed abruptly ends when client-go's streams do). The check
// still fails what is left after d.
func Teardown(d time.Duration) Option { return func(o *options) { o.teardown = d } }

// How long the suite waits for something that must happen (only to end a
// test that would otherwise hang), and the generous bound on what the
// contract says happens at once (a Start, a Run that leaves processes
// behind): the suite measures no other time.
const (
	waitLimit   = 20 * time.Second
	atOnceBound = 5 * time.Second
	// leakBound is how long the goroutines of a closed executor may take
	// to end (goleak allows about half of it).
	leakBound = time.Second
)

// markerName names the environment variable that marks every command of
// an executor under test; tagName, the one that marks chosen processes.
const (
	markerName = "DSH_BASHTEST_MARK"
	tagName    = "DSH_BASHTEST_TAG"
)

// harnessSeq numbers executors, so that each has its own marker, and the
// tests that share one, so that each has its own tags.
var harnessSeq atomic.Int64

// harness is one executor under test as one (leaf) test uses it: an
// executor of its own, or one it shares with other tests (see
// suite.shared).
type harness struct {
	t    *testing.T
	e    *recorder
	cfg  Config
	id   string // unique to the test: the prefix of its tags
	mark string // the marker's value: the executor's
	dir  string // where fifo makes FIFOs: the test's own directory
	opts options
	// shared says that other tests use the executor too: it is closed
	// and checked when the suite ends, not when this test does.
	shared bool
}

// newHarness makes an executor with the suite's default Config, edited by
// edit, and registers its checked Close.
func newHarness(t *testing.T, newExec NewFunc, opts options, edit func(*Config)) *harness {
	t.Helper()
	id := fmt.Sprintf("%d.%d", os.Getpid(), harnessSeq.Add(1))
	labelGoroutine(id)
	c := Config{
		Cwd:     t.TempDir(),
		Timeout: 20 * time.Second, MaxTimeout: 60 * time.Second,
		Grace: 200 * time.Millisecond, DrainDelay: 100 * time.Millisecond,
		MaxOutputBytes:   4096,
		MaxTasksPerOwner: 8, MaxTasks: 16,
		Env: []string{markerName + "=" + id},
	}
	if edit != nil {
		edit(&c)
	}
	e := newExec(t, c)
	if e == nil {
		t.Fatal("the NewFunc returned no executor")
	}
	h := &harness{t: t, e: newRecorder(e), cfg: c, id: id, mark: id, dir: c.Cwd, opts: opts}
	t.Cleanup(h.finish)
	return h
}

// NewExecutor makes an executor as Run makes one for each of its tests,
// for a suite of a layer above the seam (package toolbash/toolbashtest
// drives the tools over it): with the suite's default Config, edited by
// edit (which may be nil), and a marker in Config.Env that finds the
// executor's processes. When the test ends it is closed, twice, and
// checked to leave no process and no goroutine behind, as in Run; a
// goroutine the caller starts on t's goroutine after NewExecutor returns
// (an executor's user, say) counts as the executor's, so it must have
// ended by then. It returns the executor and the Config it was made with.
func NewExecutor(t *testing.T, newExec NewFunc, edit func(*Config)) (bash.Executor, Config) {
	t.Helper()
	h := newHarness(t, newExec, options{}, edit)
	return h.e, h.cfg
}

// finish closes the executor (a second time if the test did) and checks
// that nothing of it is left: no process, no goroutine.
func (h *harness) finish() {
	t := h.t
	unlabelGoroutine() // the test's own goroutine is not one the executor left
	if err := h.e.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := h.e.Close(); err != nil {
		t.Errorf("Close again (it must be idempotent): %v", err)
	}
	if pids := livePids(markerName + "=" + h.mark); len(pids) > 0 {
		t.Errorf("processes of the executor's commands outlived Close: %s", describePids(pids))
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL) // ours (marked): keep the next tests clean
		}
	}
	if left := goroutinesLeft(h.mark, cmp.Or(h.opts.teardown, leakBound)); len(left) > 0 {
		t.Errorf("goroutines left behind after Close:\n%s", strings.Join(left, "\n\n"))
	}
}

// close closes the executor now, checking the error. A test that closes
// its executor has one of its own.
func (h *harness) close() {
	h.t.Helper()
	if h.shared {
		h.t.Fatal("bashtest: a test closes the executor it shares with others")
	}
	if err := h.e.Close(); err != nil {
		h.t.Errorf("Close: %v", err)
	}
}
