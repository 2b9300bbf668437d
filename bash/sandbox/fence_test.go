//go:build linux

package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/local"
	"github.com/dshgo/dsh/internal/testwait"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// hostServices are services of the host's on unix sockets in a home
// directory the jails can see (under /var/tmp, which they do not cover):
// a stream listener (svc.sock), a datagram socket (svc.dgram) and a
// seqpacket listener (svc.seq). Each is non-blocking, so that reached
// tells at once, without waiting, whether anything got there: a connect
// is queued, and a datagram received, by the time the call returns.
type hostServices struct {
	home string
	fds  map[string]int // by file name
}

func newHostServices(t *testing.T) *hostServices {
	home, err := os.MkdirTemp("/var/tmp", "dsh-fence-home-")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostServices{home: home, fds: map[string]int{}}
	t.Cleanup(func() {
		for _, fd := range h.fds {
			unix.Close(fd)
		}
		os.RemoveAll(home)
	})
	for name, typ := range map[string]int{"svc.sock": unix.SOCK_STREAM, "svc.dgram": unix.SOCK_DGRAM, "svc.seq": unix.SOCK_SEQPACKET} {
		fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(home, name)})
		}
		if err == nil && typ != unix.SOCK_DGRAM {
			err = unix.Listen(fd, 4096)
		}
		if err != nil {
			t.Fatal(err)
		}
		h.fds[name] = fd
	}
	return h
}

func (h *hostServices) path(name string) string { return filepath.Join(h.home, name) }

// reached lists the services that a connection or a datagram reached
// since the last call, and takes it from them.
func (h *hostServices) reached() []string {
	var got []string
	buf := make([]byte, 64)
	for name, fd := range h.fds {
		n := 0
		for {
			var err error
			if name == "svc.dgram" {
				_, _, err = unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
			} else {
				var c int
				if c, _, err = unix.Accept4(fd, unix.SOCK_CLOEXEC); err == nil {
					unix.Close(c)
				}
			}
			if err != nil {
				break
			}
			n++
		}
		if n > 0 {
			got = append(got, name)
		}
	}
	return got
}

// fenceRig is a jail of one network mode whose home directory holds the
// host's services.
type fenceRig struct {
	host *hostServices
	e    *Executor
	ws   string
}

// closingEgress accepts the proxy's connections and closes them.
type closingEgress struct{}

func (closingEgress) Serve(l net.Listener, owner string) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		c.Close()
	}
}
func (closingEgress) EndOwner(string) {}

func newFenceRig(t *testing.T, network Network, o *Options) *fenceRig {
	r := &fenceRig{host: newHostServices(t), ws: t.TempDir()}
	// The executor's temporary directories, which jails cover, are the
	// test's own: not /var/tmp, where $TMPDIR may point.
	tmp := t.TempDir()
	if o == nil {
		o = &Options{}
	}
	o.Layer, o.TempDir, o.Policy.Network, o.Policy.Home = LayerJail, tmp, network, r.host.home
	o.Local = &local.Options{Cwd: r.ws, SpillDir: tmp, Env: []string{"HOME=" + r.host.home, "PATH=" + os.Getenv("PATH")}}
	if network == NetworkAllowlist {
		o.Egress = closingEgress{}
	}
	var err error
	if r.e, err = newSandbox(t, o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.e.Close() })
	return r
}

// run runs cmd in the rig's jail and returns its stdout.
func (r *fenceRig) run(t *testing.T, cmd string) string {
	t.Helper()
	ctx := context.Background()
	spec, err := r.e.Resolve(ctx, bash.ExecRequest{Command: cmd, Owner: "o", Workspace: r.ws, Workdir: r.ws, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", cmd, res.ExitCode, res.Stdout.Text, res.Stderr.Text)
	}
	return res.Stdout.Text
}

// fenceAttack is one attempt to reach a host service's unix socket, and
// what the probe prints when the fence refuses it. With the allowlist,
// whose fence is the network off's, only those marked allowlist run.
type fenceAttack struct {
	name      string
	cmd       func(r *fenceRig) string
	refused   string
	allowlist bool
}

// probe is the command running the system call probe with args.
func (r *fenceRig) probe(args ...string) string { return probeIn(r.ws, args...) }

var fenceAttacks = []fenceAttack{
	{"connect by its path",
		func(r *fenceRig) string { return r.probe("fence", "connect", "stream", r.host.path("svc.sock")) },
		"connect: permission denied", true},
	{"connect a datagram socket and send",
		func(r *fenceRig) string { return r.probe("fence", "connect", "dgram", r.host.path("svc.dgram")) },
		"connect: permission denied", true},
	{"connect a seqpacket socket",
		func(r *fenceRig) string { return r.probe("fence", "connect", "seqpacket", r.host.path("svc.seq")) },
		"connect: permission denied", false},
	{"connect without blocking",
		func(r *fenceRig) string {
			return r.probe("fence", "connect", "stream", r.host.path("svc.sock"), "nonblock")
		},
		"connect: permission denied", false},
	{"connect by a path relative to the working directory",
		func(r *fenceRig) string { return "cd ~ && " + r.probe("fence", "connect", "stream", "svc.sock") },
		"connect: permission denied", false},
	{"connect by a path climbing out of the workspace",
		func(r *fenceRig) string {
			rel, _ := filepath.Rel(r.ws, r.host.path("svc.sock"))
			return r.probe("fence", "connect", "stream", rel)
		},
		"connect: permission denied", false},
	{"connect through a symbolic link in the workspace",
		func(r *fenceRig) string {
			return "ln -sf " + r.host.path("svc.sock") + " link.sock && " + r.probe("fence", "connect", "stream", "link.sock")
		},
		"connect: permission denied", false},
	{"connect through a linked directory",
		func(r *fenceRig) string {
			return "ln -sfn " + r.host.home + " home && " + r.probe("fence", "connect", "stream", r.ws+"/home/svc.sock")
		},
		"connect: permission denied", false},
	{"connect through /proc/self/cwd",
		func(r *fenceRig) string {
			return "cd ~ && " + r.probe("fence", "connect", "stream", "/proc/self/cwd/svc.sock")
		},
		"connect: permission denied", true},
	{"connect through a directory's descriptor in /proc/self/fd",
		func(r *fenceRig) string {
			return "exec 7<~ && " + r.probe("fence", "connect", "stream", "/proc/self/fd/7/svc.sock")
		},
		"connect: permission denied", false},
	{"send a datagram with sendto",
		func(r *fenceRig) string { return r.probe("fence", "sendto", r.host.path("svc.dgram")) },
		"sendto: permission denied", false},
	{"send a datagram with sendmsg",
		func(r *fenceRig) string { return r.probe("fence", "sendmsg", r.host.path("svc.dgram")) },
		"sendmsg: permission denied", true},
	{"send datagrams with sendmmsg",
		func(r *fenceRig) string { return r.probe("fence", "sendmmsg", r.host.path("svc.dgram")) },
		"sendmmsg: permission denied", false},
	{"race a rewrite of the address against the check",
		// Each connect names the probe's own socket while another thread
		// rewrites the address to the host's and back.
		func(r *fenceRig) string {
			return r.probe("fence", "race-addr", "/tmp/own.sock", r.host.path("svc.sock"))
		},
		"race-addr: ", false},
	{"race a rewrite of msg_name against the check",
		func(r *fenceRig) string {
			return r.probe("fence", "race-msg", "/tmp/own.dgram", r.host.path("svc.dgram"))
		},
		"race-msg: ", false},
	{"race a swap of the path against the check",
		// Each connect names a link to the probe's own socket, which
		// another thread keeps exchanging with a link to the host's.
		func(r *fenceRig) string {
			return "mkdir /tmp/race && " + r.probe("fence", "race-path", "/tmp/race/own.sock", r.host.path("svc.sock"))
		},
		"race-path: ", false},
	{"race a dup2 onto the descriptor against the check",
		// The descriptor is a TCP socket, which a path cannot lead
		// anywhere, while another thread swaps a unix socket in and out.
		func(r *fenceRig) string { return r.probe("fence", "race-fd", r.host.path("svc.sock")) },
		"race-fd: 0 reached", false},
}

// TestFenceHostSockets runs every fenceAttack in a jail with the network
// off, and some in one on the allowlist: each must be refused, and no
// host service may hear of it. In a jail with the network on, which the fence
// leaves alone, each must reach the host's service: the test sees it
// happen.
func TestFenceHostSockets(t *testing.T) {
	t.Parallel()
	for _, network := range []Network{NetworkOff, NetworkAllowlist, NetworkOn} {
		t.Run(network.String(), func(t *testing.T) {
			t.Parallel()
			r := newFenceRig(t, network, nil)
			for _, a := range fenceAttacks {
				if network == NetworkAllowlist && !a.allowlist {
					continue
				}
				t.Run(a.name, func(t *testing.T) {
					if network == NetworkOn {
						controlReaches(t, r, a)
						return
					}
					out := r.run(t, a.cmd(r))
					if reached := r.host.reached(); len(reached) > 0 {
						t.Errorf("the host's %v heard from the jail\nstdout: %s", reached, out)
					}
					if !strings.Contains(out, a.refused) {
						t.Errorf("stdout %q, want %q", out, a.refused)
					}
				})
			}
		})
	}
}

// controlTries bounds the tries of an attack in the control, the jail
// with the network on: a race there may be lost on a loaded machine
// (the flipper not scheduled while the calls run), and then nothing
// reaches the host's services although nothing stops it.
const controlTries = 5

// controlReaches runs attack a in r, a jail with the network on, and
// fails the test unless a host service hears of it. A try that reaches
// nothing is tried again in a fresh jail, with fresh directories and
// services (an attack is not made to run twice in one: the path race
// makes its directory with mkdir), at most controlTries times; only then
// the test cannot tell.
func controlReaches(t *testing.T, r *fenceRig, a fenceAttack) {
	t.Helper()
	for try := 1; ; try++ {
		out := r.run(t, a.cmd(r))
		if len(r.host.reached()) > 0 {
			return
		}
		if try == controlTries {
			t.Errorf("with the network on, nothing reached the host's services in %d tries: the test cannot tell\nstdout of the last: %s", try, out)
			return
		}
		t.Logf("try %d reached nothing (stdout %q): trying again in a fresh jail", try, out)
		r = newFenceRig(t, NetworkOn, nil)
	}
}

// ownSockets is a Python program that makes, and uses, sockets of its
// own, as a session's servers and tools do; each line says how one use
// went.
const ownSockets = `import errno, multiprocessing as mp, os, select, signal, socket, struct, sys

def pair(path, via=None, typ=socket.SOCK_STREAM):
    srv = socket.socket(socket.AF_UNIX, typ); srv.bind(path); srv.listen()
    c = socket.socket(socket.AF_UNIX, typ); c.connect(via or path)
    conn, _ = srv.accept(); c.sendall(b"ping"); assert conn.recv(4) == b"ping"

def in_tmp(f):
    os.chdir("/tmp")
    try: return f()
    finally: os.chdir(sys.argv[1])

def datagrams():
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); srv.bind("/tmp/own.dgram")
    c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    c.sendto(b"to", "/tmp/own.dgram"); c.sendmsg([b"msg"], [], 0, "/tmp/own.dgram")
    return srv.recv(8) + b" " + srv.recv(8)

def descriptors():
    srv = socket.socket(socket.AF_UNIX); srv.bind("/tmp/fds.sock"); srv.listen()
    c = socket.socket(socket.AF_UNIX); c.connect("/tmp/fds.sock"); conn, _ = srv.accept()
    r, w = os.pipe()
    socket.send_fds(c, [b"f"], [r])
    _, fds, _, _ = socket.recv_fds(conn, 1, 1)
    os.write(w, b"through the pipe")
    return os.read(fds[0], 64)

def nonblocking():
    srv = socket.socket(socket.AF_UNIX); srv.bind("/tmp/nb.sock"); srv.listen()
    c = socket.socket(socket.AF_UNIX); c.setblocking(False)
    u = c.connect_ex("/tmp/nb.sock")
    l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
    t = socket.socket(); t.setblocking(False)
    e = t.connect_ex(l.getsockname())
    select.select([], [t], [], 20)
    return "unix %s, tcp %s then %s" % (u, errno.errorcode.get(e, e), t.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))

def tcp():
    l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
    c = socket.create_connection(l.getsockname()); conn, _ = l.accept(); c.sendall(b"tcp")
    return conn.recv(3)

def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"udp", s.getsockname())
    return s.recv(3)

def manager():
    with mp.Manager() as m:
        d = m.dict(); d["k"] = 42
        return d["k"]

def forkserver():
    with mp.get_context("forkserver").Pool(2) as p:
        return sum(p.map(abs, [-1, -2, 3]))

def sigpipe():
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        a, b = socket.socketpair(); b.close()
        try: a.sendmsg([b"x"])
        finally: os._exit(1)
    _, status = os.waitpid(pid, 0)
    return "killed by signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exit %d" % os.WEXITSTATUS(status)

def credentials():
    a, b = socket.socketpair()
    a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("3i", os.getpid(), os.getuid(), os.getgid()))])

def check(name, f):
    try:
        r = f()
        print("%s: %s" % (name, "ok" if r is None else r))
    except Exception as e:
        print("%s: %s: %s" % (name, type(e).__name__, e))

if __name__ == "__main__":
    check("a stream socket in the workspace", lambda: pair(os.path.join(sys.argv[1], "own.sock")))
    check("a stream socket in /tmp", lambda: pair("/tmp/own.sock"))
    check("a seqpacket socket in /tmp", lambda: pair("/tmp/own.seq", typ=socket.SOCK_SEQPACKET))
    check("by a relative path", lambda: in_tmp(lambda: pair("/tmp/rel.sock", "rel.sock")))
    check("through /proc/self/cwd", lambda: in_tmp(lambda: pair("/tmp/cwd.sock", "/proc/self/cwd/cwd.sock")))
    os.symlink("/tmp/linked.sock", "link.sock")
    check("through a symbolic link", lambda: pair("/tmp/linked.sock", "link.sock"))
    check("datagrams sent to an address", datagrams)
    check("descriptors passed", descriptors)
    check("non-blocking connects", nonblocking)
    check("TCP on loopback", tcp)
    check("UDP on loopback", udp)
    check("an abstract socket", lambda: pair("\0dsh-own-abstract"))
    check("a multiprocessing Manager", manager)
    check("a multiprocessing Pool of the forkserver", forkserver)
    check("a send to a closed peer", sigpipe)
    check("credentials sent along", credentials)
`

// TestFenceOwnSockets: in a fenced jail (the network off; the allowlist's
// fence is the same), the sockets a session makes for
// itself still work: servers and clients on unix sockets in the
// workspace and in /tmp (by absolute and relative paths, through links
// and /proc/self/cwd, stream, seqpacket and datagram, descriptors passed
// along), non-blocking connects, TCP and UDP on the jail's loopback, an
// abstract socket, Python's multiprocessing (a Manager's server, the
// forkserver, which passes descriptors), and SIGPIPE for a send to a
// closed peer. Credentials sent along (SCM_CREDENTIALS) are refused, as
// the fence's doc says.
func TestFenceOwnSockets(t *testing.T) {
	t.Parallel()
	want := `a stream socket in the workspace: ok
a stream socket in /tmp: ok
a seqpacket socket in /tmp: ok
by a relative path: ok
through /proc/self/cwd: ok
through a symbolic link: ok
datagrams sent to an address: b'to msg'
descriptors passed: b'through the pipe'
non-blocking connects: unix 0, tcp EINPROGRESS then 0
TCP on loopback: b'tcp'
UDP on loopback: b'udp'
an abstract socket: ok
a multiprocessing Manager: 42
a multiprocessing Pool of the forkserver: 6
a send to a closed peer: killed by signal 13
credentials sent along: PermissionError: [Errno 1] Operation not permitted
own-sendmmsg: received "xy"
`
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no python3")
	}
	r := newFenceRig(t, NetworkOff, nil)
	if err := os.WriteFile(filepath.Join(r.ws, "own.py"), []byte(ownSockets), 0o644); err != nil {
		t.Fatal(err)
	}
	out := r.run(t, "python3 own.py \"$PWD\" && "+r.probe("fence", "own-sendmmsg", "/tmp/mmsg.dgram"))
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	if reached := r.host.reached(); len(reached) > 0 {
		t.Errorf("the host's %v heard from the jail", reached)
	}
}

// TestFenceFilter runs the fence's filter on system calls: those that can
// name a unix socket by path go to the host, and nothing else.
func TestFenceFilter(t *testing.T) {
	raw, err := fenceProgram()
	if err != nil {
		t.Skip(err)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter does not disassemble")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	arch, _ := auditArch()
	// run is the filter's verdict on a call, its struct seccomp_data as
	// the VM reads it (32-bit words in network order).
	run := func(arch uint32, nr int, args ...uint64) uint32 {
		b := make([]byte, 64)
		binary.BigEndian.PutUint32(b[offNr:], uint32(nr))
		binary.BigEndian.PutUint32(b[offArch:], arch)
		for i, a := range args {
			binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
			binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32))
		}
		v, err := vm.Run(b)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(v)
	}
	const notify, allow = unix.SECCOMP_RET_USER_NOTIF, unix.SECCOMP_RET_ALLOW
	for _, c := range []struct {
		name string
		arch uint32
		nr   int
		args []uint64
		want uint32
	}{
		{"connect", arch, unix.SYS_CONNECT, []uint64{3, 0x7000, 110}, notify},
		{"sendmsg", arch, unix.SYS_SENDMSG, []uint64{3, 0x7000, 0}, notify},
		{"sendmmsg", arch, unix.SYS_SENDMMSG, []uint64{3, 0x7000, 2, 0}, notify},
		{"sendto with an address", arch, unix.SYS_SENDTO, []uint64{3, 0x7000, 1, 0, 0x7100, 110}, notify},
		{"sendto with an address above 4 GiB", arch, unix.SYS_SENDTO, []uint64{3, 0x7000, 1, 0, 0x7f0000000000, 110}, notify},
		{"sendto without one", arch, unix.SYS_SENDTO, []uint64{3, 0x7000, 1, 0, 0, 0}, allow},
		{"write", arch, unix.SYS_WRITE, []uint64{3, 0x7000, 1}, allow},
		{"socket", arch, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, allow},
		{"another architecture's connect", arch + 1, unix.SYS_CONNECT, nil, allow}, // the jail's filter kills it
	} {
		if got := run(c.arch, c.nr, c.args...); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}

// TestFenceDescriptorsChecked: the host takes the fence's descriptors
// from the agent only as a seccomp listener and a sock_diag socket of
// another network namespace than its own (where a dump would list the
// host's sockets as the jail's); an agent asked for a fence must come
// with one, or say why the kernel cannot.
func TestFenceDescriptorsChecked(t *testing.T) {
	listener := func(t *testing.T) int {
		// A real one: the filter is installed on a thread that ends with
		// the goroutine, its only user.
		got := make(chan int, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits
			fd, why, err := installFence()
			if err != nil || why != nil {
				fd = -1
			}
			got <- fd
		}()
		fd := <-got
		if fd < 0 {
			t.Skip("no seccomp user notification here")
		}
		return fd
	}
	diag := func(t *testing.T) int {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	// otherDiag is a sock_diag socket of a network namespace of its own,
	// made on a thread that ends with the goroutine (as root only).
	otherDiag := func(t *testing.T) int {
		got := make(chan int, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits
			fd := -1
			if unix.Unshare(unix.CLONE_NEWNET) == nil {
				fd, _ = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
			}
			got <- fd
		}()
		fd := <-got
		if fd < 0 {
			t.Skip("cannot make a network namespace here")
		}
		return fd
	}
	for _, tc := range []struct {
		name string
		msg  agentMsg
		fds  func(t *testing.T) []int
		ok   bool
	}{
		{"no fence, and why", agentMsg{Started: true, FenceErr: "no seccomp user notification"}, func(t *testing.T) []int { return nil }, true},
		{"no fence, and no word why", agentMsg{Started: true}, func(t *testing.T) []int { return nil }, false},
		{"files", agentMsg{Started: true, Fence: true}, func(t *testing.T) []int { return devNulls(t, 2) }, false},
		{"one", agentMsg{Started: true, Fence: true}, func(t *testing.T) []int { return []int{listener(t)} }, false},
		{"a sock_diag socket of the host's", agentMsg{Started: true, Fence: true}, func(t *testing.T) []int { return []int{listener(t), diag(t)} }, false},
		{"a sock_diag socket of another network namespace", agentMsg{Started: true, Fence: true}, func(t *testing.T) []int { return []int{listener(t), otherDiag(t)} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJail("k", "o")
			j.fenced = true
			err := j.dispatch(tc.msg, tc.fds(t))
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, errProtocol) {
				t.Fatalf("dispatch: %v, want ok %v or a protocol error", err, tc.ok)
			}
			if j.fence != nil {
				j.fence.close()
			}
		})
	}
}

// TestFenceEndsWithCallsInFlight: a session that ends while the host is
// making blocking calls for it (a connect to a unix socket whose backlog
// is full, and one to a TCP listener's) ends at once, and no call, nor
// any goroutine of the fence's, outlives it.
func TestFenceEndsWithCallsInFlight(t *testing.T) {
	t.Parallel()
	r := newFenceRig(t, NetworkOff, nil)
	script := `import socket, threading
u = socket.socket(socket.AF_UNIX); u.bind("/tmp/full.sock"); u.listen(0)
held = []
while True:
    c = socket.socket(socket.AF_UNIX); c.setblocking(False)
    try: c.connect("/tmp/full.sock"); held.append(c)
    except BlockingIOError: break
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(0)
def tcp():
    while True: held.append(socket.create_connection(l.getsockname()))
threading.Thread(target=tcp).start()
socket.socket(socket.AF_UNIX).connect("/tmp/full.sock")
`
	if err := os.WriteFile(filepath.Join(r.ws, "block.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec, err := r.e.Resolve(ctx, bash.ExecRequest{Command: "python3 block.py", Owner: "o", Workspace: r.ws, Workdir: r.ws})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	r.e.jails.mu.Lock()
	j := r.e.jails.byKey[jailKey("o", r.ws)]
	r.e.jails.mu.Unlock()
	if j == nil || j.fence == nil {
		t.Fatal("the session's jail has no fence")
	}
	limit := time.After(testwait.Limit)
	for {
		n, changed := j.fence.inFlight()
		if n == 2 {
			break
		}
		select {
		case <-changed:
		case <-limit:
			t.Fatalf("%d calls in flight after %v, want 2", n, testwait.Limit)
		}
	}
	start := time.Now()
	if err := r.e.EndOwner(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the session took %v to end", d)
	}
	if n, _ := j.fence.inFlight(); n != 0 {
		t.Errorf("%d calls in flight after the session's end", n)
	}
}

// TestFenceRefusesWhatItCannotTell: a socket on a file system whose
// inode numbers may alias another's (here a tmpfs of the host's, which
// numbers its inodes in 64 bits, made writable) is refused, even the
// session's own: the kernel names a bound socket's inode by 32 bits of
// its number only.
func TestFenceRefusesWhatItCannotTell(t *testing.T) {
	t.Parallel()
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs at /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "dsh-fence-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := newFenceRig(t, NetworkOff, &Options{Policy: Policy{Writable: []string{dir}}})
	script := `import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()
try: socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("connected")
except OSError as e: print(e.strerror)
`
	if err := os.WriteFile(filepath.Join(r.ws, "shm.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := r.run(t, "python3 shm.py "+filepath.Join(dir, "own.sock")); out != "Permission denied\n" {
		t.Errorf("stdout %q, want Permission denied", out)
	}
}

// TestNoUnixFilter: where the fence cannot supervise, the forker's thread,
// and so every command, refuses socket(AF_UNIX) and keeps socketpair and
// inet sockets.
func TestNoUnixFilter(t *testing.T) {
	got := make(chan string, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the filtered thread exits
		if err := installNoUnix(); err != nil {
			got <- err.Error()
			return
		}
		var out []string
		for _, c := range []struct {
			name string
			make func() (int, error)
		}{
			{"unix", func() (int, error) { return unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0) }},
			{"pair", func() (int, error) {
				p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err == nil {
					unix.Close(p[1])
				}
				return p[0], err
			}},
			{"inet", func() (int, error) { return unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0) }},
		} {
			fd, err := c.make()
			if err == nil {
				unix.Close(fd)
			}
			out = append(out, c.name+": "+result(err))
		}
		got <- strings.Join(out, ", ")
	}()
	if out, want := <-got, "unix: operation not permitted, pair: succeeded, inet: succeeded"; out != want {
		t.Errorf("%s, want %s", out, want)
	}
}

// TestTmpfsDevs: the jail's own tmpfs mounts are found in its mount
// table at the paths they are mounted at now, the one on top where
// several are; a path moved away (a directory above it renamed) or
// covered by something else is not one of them.
func TestTmpfsDevs(t *testing.T) {
	const mountinfo = `1 0 8:1 / / ro - ext4 /dev/root rw
2 1 0:40 / /tmp rw - tmpfs tmpfs rw
3 1 0:41 / /dev rw - tmpfs tmpfs rw
4 1 8:1 /home/u/ws /home/u/ws rw - ext4 /dev/root rw
5 4 0:42 / /home/u/ws/sub.old/cover rw - tmpfs tmpfs rw
6 1 0:43 / /srv/a\040b rw - tmpfs tmpfs rw
7 1 0:44 / /var/tmp rw - tmpfs tmpfs rw
8 7 8:1 /x /var/tmp rw - ext4 /dev/root rw
`
	got := tmpfsDevs(mountinfo, []string{"/tmp", "/dev", "/home/u/ws/sub/cover", "/srv/a b", "/var/tmp"})
	want := []uint32{40, 41, 43}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// slotsHog holds every slot of the fence with connects that block (to a
// socket of its own whose backlog is full) and more waiting, then makes a
// non-blocking connect to another socket of its own, which must complete:
// the fence's loop does not wait for a slot.
const slotsHog = `
import glob, socket, threading, time
l = socket.socket(socket.AF_UNIX); l.bind('/tmp/full.sock'); l.listen(0)
for i in range(4):
    c = socket.socket(socket.AF_UNIX); c.setblocking(False)
    try: c.connect('/tmp/full.sock')
    except OSError: pass
def block():
    try: socket.socket(socket.AF_UNIX).connect('/tmp/full.sock')
    except OSError: pass
for i in range(70):
    threading.Thread(target=block, daemon=True).start()
def waiting():
    n = 0
    for w in glob.glob('/proc/self/task/*/wchan'):
        try: n += 'seccomp' in open(w).read()
        except OSError: pass
    return n
deadline = time.monotonic() + 15
while waiting() < 66 and time.monotonic() < deadline:
    time.sleep(0.01)
print('waiting', waiting() >= 66)
o = socket.socket(socket.AF_UNIX); o.bind('/tmp/other.sock'); o.listen(5)
c = socket.socket(socket.AF_UNIX); c.setblocking(False); c.connect('/tmp/other.sock')
print('connected')
`

// TestFenceSlotsFull: a command whose calls hold every slot of the fence
// holds up only its own calls that may block: a non-blocking connect
// still completes (found by an attack review: the loop waited for a slot,
// and every call of the jail hung).
func TestFenceSlotsFull(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	r := newFenceRig(t, NetworkOff, nil)
	if err := os.WriteFile(filepath.Join(r.ws, "hog.py"), []byte(slotsHog), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := r.run(t, "timeout 15 python3 hog.py"); got != "waiting True\nconnected\n" {
		t.Errorf("got %q", got)
	}
}

// result is how a call ended.
func result(err error) string {
	if err != nil {
		return err.Error()
	}
	return "succeeded"
}
