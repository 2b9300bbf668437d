//go:build linux

package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/bashtest"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/proctest"
	"github.com/dshgo/dsh/internal/testwait"
	"github.com/dshgo/dsh/observe"
	"github.com/dshgo/dsh/toolbash/toolbashtest"
	"golang.org/x/sys/unix"
)

// warmRig is a sandbox executor with a warm pool, and what it told of its
// jails' starts.
type warmRig struct {
	e    *Executor
	ws   string // the sessions' workspace
	home string // the policy's home directory, holding a key
	// pool receives each jail started into the pool, once it is idle;
	// starts, each start for a session and each claim.
	pool   chan observe.JailStart
	mu     sync.Mutex
	starts map[string][]observe.JailStart // by session name
	logs   chan string
}

// newWarmRig makes a rig of layer whose pool keeps warm jails (0: no
// pool; with once, it starts them once and not again after claims),
// with a workspace that holds what a jail protects, and waits until the
// pool is full. The two rigs of one test (a pooled one and one without
// a pool) share the workspace and the home directory: what their
// sessions see may be compared. New's checks are skipped (noCheck):
// they start jails of their own.
func newWarmRig(t *testing.T, layer Layer, warm int, once bool, share *warmRig) *warmRig {
	t.Helper()
	r := &warmRig{pool: make(chan observe.JailStart, 64), starts: map[string][]observe.JailStart{}, logs: make(chan string, 64)}
	if share != nil {
		r.ws, r.home = share.ws, share.home
	} else {
		r.ws, r.home = t.TempDir(), t.TempDir()
		mkTree(t, r.home, map[string]string{".ssh/id_ed25519": "PRIVATE-KEY\n"})
		mkTree(t, r.ws, map[string]string{".git/config": "[core]\n", ".git/hooks/x": "", "sub/.git/config": "[core]\n",
			".dsh/permissions.json": "{}\n", "ro/file": "", "secret/file": "SECRET\n", "plain": "plain\n"})
	}
	o := &Options{Layer: checkedLayer(t, layer), noCheck: true, Warm: warm, warmOnce: once, TempDir: t.TempDir(),
		Policy: Policy{Home: r.home, ReadOnly: []string{filepath.Join(r.ws, "ro")}, Hidden: []string{filepath.Join(r.ws, "secret")}},
		Local:  &local.Options{Cwd: r.ws, SpillDir: t.TempDir(), Env: []string{"HOME=" + r.home}},
		Observe: func(ev observe.Event) {
			js := *ev.(*observe.JailStart)
			if js.Session == "" && js.Err == "" {
				r.pool <- js
				return
			}
			r.mu.Lock()
			r.starts[js.Session] = append(r.starts[js.Session], js)
			r.mu.Unlock()
		},
		Logf: func(format string, a ...any) {
			select {
			case r.logs <- strings.TrimSpace(strings.SplitN(format, "(", 2)[0]):
			default:
			}
			t.Logf("pool: "+format, a...)
		},
	}
	var err error
	r.e, err = newSandbox(t, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.e.Close() })
	r.filled(t, warm)
	return r
}

// filled waits until n more jails have started into the pool.
func (r *warmRig) filled(t *testing.T, n int) {
	t.Helper()
	for range n {
		testwait.Recv(t, r.pool, "a warm jail's start")
	}
}

// claimed reports whether the session's jail was a warm one: one start,
// a claim.
func (r *warmRig) claimed(owner string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.starts[observe.SessionName(owner)]
	return len(s) == 1 && s[0].Pooled && s[0].Err == ""
}

func (r *warmRig) run(t *testing.T, owner, cmd string) bash.RunResult {
	t.Helper()
	ctx := context.Background()
	spec, err := r.e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: owner, Workspace: r.ws, Workdir: r.ws, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// mkTree makes the files (their parents too) under dir.
func mkTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// viewProbe is a command that prints what a session's jail is: its
// mounts (the one on top at each mount point), its credentials,
// capabilities and filters, its processes, its /tmp and TMPDIR, its
// environment, and what it may write and read; normalize makes the
// outputs of two sessions comparable.
func viewProbe(layer Layer, ws, home string) string {
	writes := []string{ws + "/new", ws + "/.git/config", ws + "/.git/hooks/x", ws + "/sub/.git/config", ws + "/.dsh/permissions.json",
		ws + "/ro/file", ws + "/secret/file", "/etc/passwd", home + "/.ssh/id_ed25519", "$TMPDIR/t"}
	// The mounts of the jail's own, and the host's where it hides some
	// (the host's others may come and go between two probes).
	return `echo "== mounts"; awk '$5 ~ "^/($|tmp|dev|proc|etc|run|sys)" { for (i = 7; $i != "-"; i++) ; print $5, $6, $(i+1) }' /proc/self/mountinfo | ` +
		`awk '{ m[$1] = $0 } END { for (k in m) print m[k] }' | sort` +
		`; echo "== status"; grep -E '^(Uid|Gid|Groups|Cap|NoNewPrivs|Seccomp)' /proc/self/status` +
		map[Layer]string{LayerJail: `; echo "== processes"; n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n`}[layer] +
		`; echo "== tmp"; ls -A /tmp 2>&1; ls -A ${TMPDIR:-/tmp} 2>&1` +
		`; echo "== env"; env | sort` +
		`; echo "== writes"; for f in ` + strings.Join(writes, " ") + `; do (: >> "$f") 2>/dev/null && echo "$f: written" || echo "$f: refused"; done` +
		`; echo "== reads"; cat ` + home + `/.ssh/id_ed25519 ` + ws + `/secret/file ` + ws + `/plain 2>&1` +
		`; echo "== ids"; id -u; hostname; echo "$PWD"; ` + probeIn(ws, "userns")
}

// normalize replaces in a probe's output what differs between two
// sessions of one policy: their temporary directories (the Landlock
// layer's) and spill directories, and their shells' pids.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`dsh-jails-[^/ ]*/tmp-[^/ \n]*`), "SESSION-TMP"},
	{regexp.MustCompile(`/[^ \n]*/dsh-spill-[^ \n]*`), "SPILL"},
	{regexp.MustCompile(`/[^ \n]*/Test[^/ \n]*/[0-9]+`), "TESTDIR"},
}

func normalize(s string) string {
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// TestWarmJailIsFresh: a session that claims a warm jail gets the jail a
// session gets that starts one: the same mounts (the workspace, its git
// directories and what stays read-only or hidden in it, the spill
// directory), credentials, capabilities, filters, processes, /tmp,
// environment, the same writes refused and reads hidden. In both layers.
func TestWarmJailIsFresh(t *testing.T) {
	t.Parallel()
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		t.Run(layer.String(), func(t *testing.T) {
			t.Parallel()
			warm := newWarmRig(t, layer, 1, true, nil)
			fresh := newWarmRig(t, layer, 0, true, warm)
			probe := viewProbe(layer, warm.ws, warm.home)
			got := warm.run(t, "warm", probe)
			if !warm.claimed("warm") {
				t.Fatalf("the session's jail was not a warm one: %+v", warm.starts)
			}
			want := fresh.run(t, "fresh", probe)
			g, w := normalize(got.Stdout.Text+got.Stderr.Text), normalize(want.Stdout.Text+want.Stderr.Text)
			if g != w {
				t.Errorf("a warm jail differs from a fresh one:\n%s\n--- warm:\n%s", lineDiff(g, w), g)
			}
			if os.Getenv("SHOWPROBE") != "" {
				t.Log(g)
			}
			if !strings.Contains(w, "/.git/config: refused") && layer == LayerJail || !strings.Contains(w, "id_ed25519: refused") {
				t.Errorf("the fresh jail does not protect what the probe tries:\n%s", w)
			}
		})
	}
}

// lineDiff lists the lines of got missing from want (-) and those of
// want missing from got (+).
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out []string
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// identity is a command that prints which jail runs it: its pid
// namespace (a jail's own) and its shell's parent, the jail's agent (pid
// 1 in a jail, a process of the host's in the Landlock layer).
const identity = `readlink /proc/self/ns/pid; echo $PPID`

// TestWarmClaimsNeverShared: sessions that start at once each claim a
// warm jail of their own, never one another's.
func TestWarmClaimsNeverShared(t *testing.T) {
	t.Parallel()
	const n = 3
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		t.Run(layer.String(), func(t *testing.T) {
			t.Parallel()
			r := newWarmRig(t, layer, n, true, nil)
			if ready, target := r.e.PoolStatus(); ready != n || target != n {
				t.Fatalf("PoolStatus: %d, %d; want %d, %d", ready, target, n, n)
			}
			ids := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { ids[i] = r.run(t, "session-"+strconv.Itoa(i), identity).Stdout.Text })
			}
			wg.Wait()
			for i := range n {
				if !r.claimed("session-" + strconv.Itoa(i)) {
					t.Errorf("session %d did not claim a warm jail", i)
				}
				if j := slices.Index(ids, ids[i]); j != i {
					t.Errorf("sessions %d and %d share a jail: %q", j, i, ids[i])
				}
			}
		})
	}
}

// TestWarmJailHoldsNothing: a warm jail serves the session that claimed
// it and no other: it does not go back to the pool when the session
// ends. The next sessions' jails are others, which hold nothing of the
// first's: not its files in /tmp (TMPDIR), not its processes.
func TestWarmJailHoldsNothing(t *testing.T) {
	t.Parallel()
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		t.Run(layer.String(), func(t *testing.T) {
			t.Parallel()
			r := newWarmRig(t, layer, 1, false, nil)
			marker := "dsh-warm-marker-" + strconv.Itoa(os.Getpid()) + "-" + layer.String()
			tmp := `${TMPDIR:-/tmp}`
			first := r.run(t, "first", `echo secret > `+tmp+`/left; (exec -a `+marker+` sleep 300 &); `+identity)
			if !r.claimed("first") {
				t.Fatal("the first session did not claim a warm jail")
			}
			// The session ends as the tool layer ends it: its tasks killed
			// (the sleep, adopted), then its jails.
			if first.Adopted != "" {
				r.e.Kill(context.Background(), first.Adopted)
			}
			if err := r.e.EndOwner(context.Background(), "first"); err != nil {
				t.Fatal(err)
			}
			r.filled(t, 1) // the first claim's refill
			if ready, _ := r.e.PoolStatus(); ready != 1 {
				t.Errorf("the pool holds %d jails after the first session's end, not its 1", ready)
			}
			// The next two sessions take all the pool has (and one may
			// get a jail started for it). [d]: neither grep nor the shell
			// matches itself.
			for _, owner := range []string{"second", "third"} {
				res := r.run(t, owner, `ls -A `+tmp+`; grep -l [d]`+marker[1:]+` /proc/[0-9]*/cmdline 2>/dev/null; `+identity)
				got := res.Stdout.Text
				if got == first.Stdout.Text || strings.Contains(got, "left") || strings.Contains(got, "/cmdline") {
					t.Errorf("the %s session's jail holds the first's: %q (the first's identity: %q)", owner, got, first.Stdout.Text)
				}
			}
			if !r.claimed("second") {
				t.Error("the second session did not claim a warm jail")
			}
		})
	}
}

// TestWarmAgentUnreachable: in the Landlock layer, where a session's
// commands see the host's processes, they cannot reach a warm agent that
// waits for its claim, which no Landlock rule restricts yet: not signal
// it (Landlock's signal scope), nor open its descriptors, nor read its
// environment or memory (Landlock's ptrace rule: a process outside the
// command's domain; and the agent is not dumpable); its socket to the
// server is no file a path opens. It stays for the next session. (A
// jail's commands see no process but their jail's.)
func TestWarmAgentUnreachable(t *testing.T) {
	t.Parallel()
	r := newWarmRig(t, LayerLandlock, 2, false, nil)
	r.run(t, "attacker", "true") // claims one
	r.filled(t, 1)
	r.e.jails.pool.mu.Lock()
	var pids []string
	for _, j := range r.e.jails.pool.idle {
		pids = append(pids, strconv.Itoa(j.cmd.Process.Pid))
	}
	r.e.jails.pool.mu.Unlock()
	kill := `kill -9 $p 2>/dev/null && echo "$p: killed"; `
	if landlockABI() < 6 {
		kill = "" // no signal scoping: a command may kill it (and the pool replaces it)
	}
	res := r.run(t, "attacker", `for p in `+strings.Join(pids, " ")+`; do `+kill+
		`(: < /proc/$p/fd/0) 2>/dev/null && echo "$p: fd opened"; `+
		`head -c 1 /proc/$p/environ 2>/dev/null | grep -q . && echo "$p: environ read"; `+
		`head -1 /proc/$p/maps 2>/dev/null | grep -q . && echo "$p: maps read"; done; echo done`)
	if res.Stdout.Text != "done\n" {
		t.Errorf("a command reached a warm agent: %q", res.Stdout.Text)
	}
	r.run(t, "next", "true")
	if !r.claimed("next") {
		t.Errorf("the next session did not claim a warm agent: %+v", r.starts)
	}
}

// TestWarmJailStale: a warm jail started before a path it would hide
// appeared (a credentials directory made since) is not claimed: the
// session gets a jail started for it, which hides the path, and the
// pool starts warm jails that hide it too.
func TestWarmJailStale(t *testing.T) {
	t.Parallel()
	r := newWarmRig(t, LayerJail, 1, false, nil)
	mkTree(t, r.home, map[string]string{".aws/credentials": "AWS-KEY\n"})
	read := "cat " + filepath.Join(r.home, ".aws", "credentials") + " 2>/dev/null; echo read"
	if res := r.run(t, "first", read); res.Stdout.Text != "read\n" || r.claimed("first") {
		t.Errorf("the first session read %q from a jail claimed (%v) before the credentials were hidden", res.Stdout.Text, r.claimed("first"))
	}
	r.filled(t, 1) // one for the host as it is now
	if res := r.run(t, "second", read); res.Stdout.Text != "read\n" || !r.claimed("second") {
		t.Errorf("the second session read %q from a warm jail (claimed: %v)", res.Stdout.Text, r.claimed("second"))
	}
}

// TestWarmJailReplaced: a warm jail that ends while idle (killed) is
// replaced, and said so; the executor's Close leaves no process of the
// pool's.
func TestWarmJailReplaced(t *testing.T) {
	t.Parallel()
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		t.Run(layer.String(), func(t *testing.T) {
			t.Parallel()
			r := newWarmRig(t, layer, 1, false, nil)
			r.e.jails.pool.mu.Lock()
			pid := r.e.jails.pool.idle[0].cmd.Process.Pid
			r.e.jails.pool.mu.Unlock()
			if err := unix.Kill(pid, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if got := testwait.Recv(t, r.logs, "the pool's word of the jail that ended"); got != "a warm sandbox ended while idle" {
				t.Errorf("the pool said %q", got)
			}
			r.filled(t, 1)
			if ready, target := r.e.PoolStatus(); ready != 1 || target != 1 {
				t.Errorf("PoolStatus: %d, %d; want 1, 1", ready, target)
			}
			var pids []int
			r.e.jails.pool.mu.Lock()
			for _, j := range r.e.jails.pool.idle {
				pids = append(pids, jailPids(j.cmd.Process.Pid)...)
			}
			r.e.jails.pool.mu.Unlock()
			if err := r.e.Close(); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				if proctest.Alive(pid) {
					t.Errorf("process %d of a warm jail outlived Close", pid)
				}
			}
		})
	}
}

// jailPids are pid and its descendants.
func jailPids(pid int) []int {
	pids := []int{pid}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	for _, f := range strings.Fields(string(b)) {
		if kid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, jailPids(kid)...)
		}
	}
	return pids
}

// TestWarmClaimFails: a warm jail whose claim fails (the workspace lies
// in a hidden directory: the jail has no mount point for it) is closed,
// said so, and the session gets what a start gives it (here bwrap's
// refusal of that workspace).
func TestWarmClaimFails(t *testing.T) {
	t.Parallel()
	r := newWarmRig(t, LayerJail, 1, true, nil)
	fresh := newWarmRig(t, LayerJail, 0, true, r)
	ws := filepath.Join(r.home, ".ssh", "project")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	call := func(r *warmRig) error {
		ctx := context.Background()
		spec, err := r.e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "hidden", Workspace: ws, Workdir: ws})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.e.Run(ctx, spec)
		return err
	}
	// What bwrap said (whether the jail's end was seen as its agent's or
	// bwrap's is a race).
	said := func(err error) string {
		s := fmt.Sprint(err)
		return s[strings.LastIndex(s, "bwrap: ")+1:]
	}
	if got, want := call(r), call(fresh); got == nil || said(got) != said(want) {
		t.Errorf("a call in a hidden workspace: %v; want what a jail started for it gives: %v", got, want)
	}
	if got := testwait.Recv(t, r.logs, "the pool's word of the failed claim"); got != "a warm sandbox could not be claimed" {
		t.Errorf("the pool said %q", got)
	}
	r.mu.Lock()
	starts := r.starts[observe.SessionName("hidden")]
	r.mu.Unlock()
	if len(starts) != 2 || !starts[0].Pooled || starts[0].Err == "" || starts[1].Pooled {
		t.Errorf("the session's starts: %+v; want a failed claim, then a start", starts)
	}
}

// TestWarmBadOptions: a negative Warm is an error.
func TestWarmBadOptions(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), &Options{Warm: -1, Agent: plainAgent(t)})
	if err == nil || !strings.Contains(err.Error(), "Warm must not be negative") {
		t.Errorf("New with Warm -1: %v", err)
	}
}

// TestIdleMessageChecked: the host takes a pooled agent's idle message
// only from a pooled jail's agent, once, with one descriptor that is a
// mount namespace other than the host's (which the host enters at the
// claim: the agent runs beside the commands, and what it sends is not
// trusted); and its ready message only after a claim.
func TestIdleMessageChecked(t *testing.T) {
	t.Parallel()
	idle := agentMsg{Idle: true}
	open := func(path string) func(*testing.T) []int {
		return func(t *testing.T) []int {
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			return []int{fd}
		}
	}
	none := func(*testing.T) []int { return nil }
	tests := []struct {
		name   string
		pooled bool
		msgs   []agentMsg
		fds    []func(*testing.T) []int
		wrong  int // the message refused
	}{
		{"not pooled", false, []agentMsg{idle}, []func(*testing.T) []int{none}, 0},
		{"no namespace", true, []agentMsg{idle}, []func(*testing.T) []int{none}, 0},
		{"no namespace but a file", true, []agentMsg{idle}, []func(*testing.T) []int{open("/dev/null")}, 0},
		{"another kind of namespace", true, []agentMsg{idle}, []func(*testing.T) []int{open("/proc/self/ns/net")}, 0},
		{"the host's mount namespace", true, []agentMsg{idle}, []func(*testing.T) []int{open("/proc/self/ns/mnt")}, 0},
		{"ready before a claim", true, []agentMsg{{Started: true}}, []func(*testing.T) []int{none}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJail("k", "o")
			if tt.pooled {
				j.claimed, j.idle = make(chan struct{}), make(chan struct{})
			}
			for i, m := range tt.msgs {
				err := j.dispatch(m, tt.fds[i](t))
				if got := errors.Is(err, errProtocol); got != (i == tt.wrong) {
					t.Fatalf("message %d (%+v): %v", i, m, err)
				}
				if err != nil {
					break
				}
			}
			if j.mntns >= 0 {
				t.Errorf("the jail took descriptor %d for its mount namespace", j.mntns)
				unix.Close(j.mntns)
			}
		})
	}
}

// TestWarmTranscript: through warm jails (both sessions of the
// transcript that run a command claim one), in both layers, the model
// reads the same bytes as through jails started for each session.
func TestWarmTranscript(t *testing.T) {
	t.Parallel()
	for _, layer := range []Layer{LayerJail, LayerLandlock} {
		t.Run(layer.String(), func(t *testing.T) {
			t.Parallel()
			var claims atomic.Int32
			toolbashtest.Transcript(t, warmConformant(layer, 2, &claims), "../../toolbash/toolbashtest/testdata/transcript.txtar", false)
			if n := claims.Load(); n != 2 {
				t.Errorf("%d of the transcript's 2 sessions that run commands claimed a warm jail", n)
			}
		})
	}
}

// warmConformant makes executors of layer for the conformance suite with
// a pool of n warm jails, and waits until it is full; claims counts the
// claims.
func warmConformant(layer Layer, n int, claims *atomic.Int32) bashtest.NewFunc {
	return func(t *testing.T, c bashtest.Config) bash.Executor {
		started := make(chan struct{}, 64)
		o := conformantOptions(t, c, layer)
		o.Warm, o.warmOnce = n, true
		o.Observe = func(ev observe.Event) {
			switch js := ev.(*observe.JailStart); {
			case js.Err != "":
			case js.Session == "":
				started <- struct{}{}
			case js.Pooled:
				claims.Add(1)
			}
		}
		e, err := newSandbox(t, o)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			testwait.Recv(t, started, "a warm jail's start")
		}
		return e
	}
}

// propagationArg makes the test binary claim a warm jail for a workspace
// and say what of the jail's mounts reached its own mount namespace.
const propagationArg = "__dsh_test_warm_propagation"

// TestWarmMountsStayInJail: the mounts a claim makes in a warm jail
// (the workspace's git directories, what stays read-only in it) do not
// propagate to the host's mount namespace, where the workspace may be a
// shared mount (systemd makes every mount shared): the clones the host
// attaches in the jail are slaves of the host's mounts. The test binary
// runs in a mount namespace of its own (unshare), where the workspace is
// a shared mount, and claims a warm jail there.
func TestWarmMountsStayInJail(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("a pool of jails needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare (util-linux)")
	}
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{".git/config": "[core]\n", ".dsh/permissions.json": "{}\n"})
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "sh", "-c", `mount --bind "$1" "$1" && mount --make-shared "$1" && exec "$2" "$3" "$1" "$4"`,
		"sh", ws, os.Args[0], propagationArg, plainAgent(t))
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "claimed; mounts in the workspace: none\n" {
		t.Errorf("%v: %s", err, out)
	}
}

// warmPropagation is the test binary's part in TestWarmMountsStayInJail:
// it claims a warm jail for workspace ws (its jails start agent) and
// prints the mounts in ws of its own mount namespace.
func warmPropagation(ws, agent string, w io.Writer) int {
	ctx := context.Background()
	starts := make(chan *observe.JailStart, 8)
	e, err := New(ctx, &Options{Layer: LayerJail, noCheck: true, Warm: 1, warmOnce: true, Agent: agent, Local: &local.Options{Cwd: ws},
		Observe: func(ev observe.Event) { starts <- ev.(*observe.JailStart) }})
	if err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	defer e.Close()
	for s := range starts {
		if s.Session == "" { // the pool's
			break
		}
	}
	spec, _ := e.Resolve(ctx, bash.ExecRequest{Command: "true", Owner: "s", Workspace: ws, Workdir: ws})
	if _, err := e.Run(ctx, spec); err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	for s := range starts {
		if s.Session != "" && !s.Pooled {
			fmt.Fprintln(w, "the session did not claim the warm jail")
		}
		if s.Session != "" {
			break
		}
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var in []string
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], ws+"/") {
			in = append(in, f[4])
		}
	}
	fmt.Fprintf(w, "claimed; mounts in the workspace: %s\n", cmp.Or(strings.Join(in, " "), "none"))
	return 0
}

// TestWarmClaimFollowsNoLink: the paths a claim binds in the workspace
// are the workspace's own: a symbolic link a session planted there (its
// .vscode made a link to the hidden ~/.ssh) does not have the next
// session's claim bind the hidden directory's contents where the jail
// hides them, nor anywhere else. (A jail started for the session refuses
// such a workspace: bwrap cannot bind onto the link.)
func TestWarmClaimFollowsNoLink(t *testing.T) {
	t.Parallel()
	r := newWarmRig(t, LayerJail, 1, true, nil)
	if err := os.Symlink(filepath.Join(r.home, ".ssh"), filepath.Join(r.ws, ".vscode")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := filepath.Join(r.home, ".ssh", "id_ed25519")
	spec, err := r.e.Resolve(ctx, bash.ExecRequest{Owner: "next", Workspace: r.ws, Workdir: r.ws,
		Command: "cat " + key + " " + filepath.Join(r.ws, ".vscode", "id_ed25519") + " 2>/dev/null; echo read"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.e.Run(ctx, spec)
	if strings.Contains(res.Stdout.Text, "PRIVATE-KEY") {
		t.Errorf("a link in the workspace exposed a hidden key: %q", res.Stdout.Text)
	}
	r.mu.Lock()
	starts := r.starts[observe.SessionName("next")]
	r.mu.Unlock()
	if len(starts) == 0 || !starts[0].Pooled || starts[0].Err == "" {
		t.Errorf("the claim did not fail on the link: %+v (the call: %v)", starts, err)
	}
}

// TestSystemHiddenInWorkspace: a hidden system path within a path a jail
// binds after hiding them (a workspace of /etc/ssh, its host keys; a
// read-only /etc, its /etc/shadow) stays hidden, in a fresh jail and in
// a warm one. As root, which could read them.
func TestSystemHiddenInWorkspace(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root reads what is hidden here; a pool of jails needs root too")
	}
	keys, _ := filepath.Glob("/etc/ssh/ssh_host_*_key")
	if len(keys) == 0 {
		t.Skip("no ssh host key to hide")
	}
	const hidden, shown = "cat /etc/ssh/ssh_host_*_key /etc/shadow 2>/dev/null | wc -c", "cat /etc/ssh/ssh_config /etc/passwd | wc -c"
	for _, c := range []struct {
		name, ws string
		readOnly []string
	}{{"workspace=/etc/ssh", "/etc/ssh", nil}, {"readonly=/etc", "", []string{"/etc"}}} {
		for _, warm := range []int{0, 1} {
			t.Run(c.name+"/warm="+strconv.Itoa(warm), func(t *testing.T) {
				t.Parallel()
				ws := cmp.Or(c.ws, t.TempDir())
				pooled := make(chan bool, 2)
				e, err := newSandbox(t, &Options{Layer: checkedLayer(t, LayerJail), noCheck: true, Warm: warm, warmOnce: true,
					TempDir: t.TempDir(), Policy: Policy{Home: t.TempDir(), ReadOnly: c.readOnly},
					Local: &local.Options{Cwd: ws, SpillDir: t.TempDir()},
					Observe: func(ev observe.Event) {
						if js := ev.(*observe.JailStart); js.Session != "" {
							pooled <- js.Pooled
						}
					}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { e.Close() })
				if !testwait.Until(func() bool { ready, _ := e.PoolStatus(); return ready == warm }) {
					t.Fatal("the pool did not fill")
				}
				ctx := t.Context()
				spec, err := e.Resolve(ctx, bash.ExecRequest{Owner: "s", Workspace: ws, Workdir: ws, Timeout: testwait.Limit,
					Command: hidden + "; " + shown})
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Run(ctx, spec)
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Fields(res.Stdout.Text); len(got) != 2 || got[0] != "0" || got[1] == "0" {
					t.Errorf("hidden bytes read, then bytes of what is not hidden: %q (stderr %q)", res.Stdout.Text, res.Stderr.Text)
				}
				if p := <-pooled; p != (warm == 1) {
					t.Errorf("the session's jail was pooled: %v", p)
				}
			})
		}
	}
}
