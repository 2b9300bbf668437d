package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/remote"
	"github.com/dshgo/dsh/bash/remote/k8s"
	"github.com/dshgo/dsh/bash/sandbox"
	"github.com/dshgo/dsh/setup"
)

// versionLine is what dsh-bash --version prints.
func versionLine() string {
	return fmt.Sprintf("dsh-bash %s (%s, %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// doctorCmd prints what a session would get here with the same flags:
// where commands run, the sandbox and why, its layers, network and paths.
// It exits 0 when the executor could be made, else 1 (2 for bad usage),
// saying why in the report.
func doctorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, ef := newFlags("doctor", stderr)
	cwd := fs.String("cwd", "", "the workspace to describe (default: the current directory)")
	if code, done := parseNoArgs(fs, args, stdout, stderr); done {
		return code
	}
	if !checkCwd("doctor", *cwd, stderr) {
		return 2
	}
	opts := ef.options()
	opts.Cwd = *cwd
	ef.remote.k8s.Warm = 0 // its probe makes the one pod it needs
	// One warm jail at most: New claims one, and refuses a pool that
	// cannot work here, as the server would.
	ef.sandbox.warm = min(ef.sandbox.warm, 1)
	fmt.Fprint(stdout, versionLine())
	s, err := ef.newExecutor(ctx, "doctor", opts, stderr)
	if err != nil {
		fmt.Fprintf(stdout, "executor: cannot be made with these settings: %v\n", err)
		return exitCode(err)
	}
	defer closeExecutor("doctor", s, stderr)
	exec := s.Executor()
	ws, err := filepath.Abs(cmp.Or(*cwd, "."))
	if err != nil {
		fmt.Fprintf(stdout, "workspace: cannot be found: %v\n", err)
		return 1
	}
	switch e := exec.(type) {
	case *k8s.Executor:
		describeK8s(ctx, stdout, e, ws, ef.remote.k8s.Template)
	case *remote.Executor, *remote.Fleet:
		describeRemote(ctx, stdout, exec, ws, s.Hosts())
	default:
		describe(stdout, s, ws, workspaceLine(ctx, exec, ws, "workspace",
			"Start dsh-bash in a project directory, or give --cwd DIR (an MCP client may name its project as a root instead)"))
		describeMissing(stdout, s.Sandboxed(), &ef.sandbox, ownConfigPaths(ef.permissions.configPath))
	}
	describePermissions(stdout, &ef.permissions)
	return 0
}

// workspaceLine says where sessions work, or that the executor refuses
// that workspace, and why.
// label names the line ("workspace"); advice says what to do instead of a
// workspace refused.
func workspaceLine(ctx context.Context, exec bash.Executor, ws, label, advice string) string {
	got, err := checkWorkspace(ctx, exec, ws)
	if why := refusalReason(err); why != "" {
		return fmt.Sprintf("%s: %s: REFUSED, a session there gets an error: %s. %s\n", label, ws, why, advice)
	}
	if err != nil {
		return fmt.Sprintf("%s: %s (not usable: %v)\n", label, ws, err)
	}
	return fmt.Sprintf("%s: %s\n", label, got)
}

// describeRemote writes the doctor's report on a remote executor or a
// fleet, whose hosts are named names: each host, how it holds commands,
// and the workspace there.
func describeRemote(ctx context.Context, w io.Writer, exec bash.Executor, ws string, names []string) {
	hosts := []*remote.Executor{}
	switch e := exec.(type) {
	case *remote.Executor:
		hosts = append(hosts, e)
	case *remote.Fleet:
		hosts = e.Hosts()
	}
	if len(hosts) == 1 {
		fmt.Fprintln(w, "commands run: on the remote host below, not on this machine")
	} else {
		fmt.Fprintf(w, "commands run: on one of the %d remote hosts below (each session stays on the one it is placed on), not on this machine\n", len(hosts))
	}
	for i, h := range hosts {
		wsLine := workspaceLine(ctx, h, ws, "  workspace there", "Name one with --remote-workspace DIR") // dials a fleet's host
		hello := h.Hello()
		if hello.Host == "" {
			fmt.Fprintf(w, "remote host: %s (not reached)\n", names[i])
		} else {
			fmt.Fprintf(w, "remote host: %s (host name %s, dsh-bash executor pid %d)\n", names[i], hello.Host, hello.Pid)
			fmt.Fprintf(w, "  containment there: %s\n", containmentThere(hello.Containment, hello.Layer))
		}
		fmt.Fprint(w, wsLine)
	}
	fmt.Fprintln(w, "sandbox: the far side's, as its dsh-bash executor's flags and configuration say (run dsh-bash doctor there to see it)")
}

// describeK8s writes the doctor's report on a pod per session: it makes a
// pod as a session's first call would, and reports what serves there.
func describeK8s(ctx context.Context, w io.Writer, e *k8s.Executor, ws, template string) {
	fmt.Fprintf(w, "commands run: in a Kubernetes pod of each session's own, namespace %s (template %s), not on this machine\n", e.Namespace(), template)
	fmt.Fprintf(w, "  pods are labelled %s=%s\n", k8s.LabelInstance, e.Instance())
	err := e.Probe(ctx, func(h *remote.Executor) error {
		hello := h.Hello()
		fmt.Fprintf(w, "probe pod: %s (dsh-bash executor pid %d, deleted again)\n", h.Host(), hello.Pid)
		fmt.Fprintf(w, "  containment there: %s\n", containmentThere(hello.Containment, hello.Layer))
		fmt.Fprint(w, workspaceLine(ctx, h, ws, "  workspace there", "Name one with --remote-workspace DIR or k8s://NAMESPACE/DIR"))
		return nil
	})
	if err != nil {
		fmt.Fprintf(w, "probe pod: FAILED, a session's first call gets this error: %v\n", err)
	}
}

// containmentThere says how a far side holds commands, and with which
// sandbox layer.
func containmentThere(c, layer string) string {
	switch c {
	case "sandbox":
		if layer != "" {
			return "sandbox (" + layer + " layer)"
		}
		return "sandbox"
	case "":
		return "unknown"
	}
	return c + ": commands are NOT sandboxed there (give its dsh-bash executor --sandbox=on)"
}

// describeMissing names the configured sandbox paths that do not exist,
// which the sandbox skips, but for own, dsh-bash's own files.
func describeMissing(w io.Writer, sandboxed bool, sf *sandboxFlags, own []string) {
	if !sandboxed {
		return
	}
	var lines []string
	for _, l := range []struct {
		name  string
		paths []string
	}{{"writable", sf.writable}, {"read-only", sf.readOnly}, {"hidden", sf.hidden}} {
		for _, p := range l.paths {
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) && !slices.Contains(own, p) {
				lines = append(lines, fmt.Sprintf("  %s (%s)\n", p, l.name))
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "configured but not found, so skipped (the start of each session looks again):")
		fmt.Fprint(w, strings.Join(lines, ""))
	}
}

// limitText is text, or "none" for a zero limit.
func limitText(n int64, text string) string {
	if n == 0 {
		return "none"
	}
	return text
}

// describe writes the doctor's report on s's executor, a local or sandbox
// one, for the workspace ws, whose line is wsLine.
func describe(w io.Writer, s *setup.Setup, ws, wsLine string) {
	se, ok := s.Executor().(*sandbox.Executor)
	if !ok {
		fmt.Fprintf(w, "containment: %s\n", setup.Containment(s.Executor()))
		if s.Mode() != "off" && s.Unsandboxed() != "" {
			fmt.Fprintf(w, "sandbox: NOT active (--sandbox=%s): %s\n", s.Mode(), s.Unsandboxed())
		} else {
			fmt.Fprintf(w, "sandbox: not active (--sandbox=%s)\n", s.Mode())
		}
		fmt.Fprint(w, wsLine)
		return
	}
	cont := se.Containment().String()
	fmt.Fprintf(w, "containment: sandbox, each command in a %s\n", cont)
	v := se.View(ws, os.Environ())
	if v.Layer == sandbox.LayerLandlock {
		fmt.Fprintf(w, "sandbox: active (--sandbox=%s): the Landlock layer, without a jail", s.Mode())
		if v.JailError != "" {
			fmt.Fprintf(w, " (%s)", v.JailError)
		}
		fmt.Fprintf(w, ": Landlock ABI %d restricts reads and writes, seccomp filter, no capabilities; not covered: %s\n", v.LandlockABI, setup.LandlockLacks)
		if v.UsernsErr != "" {
			fmt.Fprintf(w, "user namespaces: not refused to commands: %s\n", v.UsernsErr)
		} else {
			fmt.Fprintln(w, "user namespaces: refused to commands")
		}
	} else {
		net := ""
		if v.Network != sandbox.NetworkOn {
			net = ", net"
		}
		fmt.Fprintf(w, "sandbox: active (--sandbox=%s): bubblewrap namespaces (user, pid, ipc, uts%s), no capabilities, seccomp filter\n",
			s.Mode(), net)
	}
	if v.LandlockABI > 0 {
		fmt.Fprintf(w, "landlock: ABI %d (writes restricted by the kernel too)\n", v.LandlockABI)
	} else {
		fmt.Fprintln(w, "landlock: unavailable (writes restricted by the mounts alone)")
	}
	fmt.Fprintf(w, "network: %s\n", v.Network)
	if v.Network == sandbox.NetworkAllowlist {
		describeAllowlist(w, s)
	}
	fmt.Fprintf(w, "unix sockets: %s\n", unixSockets(v))
	tmp := "not its own (TMPDIR is)"
	if v.Layer != sandbox.LayerLandlock {
		tmp = limitText(v.Tmp, sandbox.ByteSize(v.Tmp)+" in memory")
	}
	cpu := "not shared out"
	if v.CPUShared {
		cpu = "an equal share"
	}
	fmt.Fprintf(w, "limits per session: memory %s, processes %s, /tmp %s, CPU %s\n",
		limitText(v.Memory, sandbox.ByteSize(v.Memory)), limitText(int64(v.Pids), strconv.Itoa(v.Pids)), tmp, cpu)
	if v.LimitsMissing != "" {
		fmt.Fprintf(w, "limits unavailable: %s\n", v.LimitsMissing)
	}
	if s.OffersEscape() {
		fmt.Fprintln(w, "outside the sandbox: a call of acp or mcp may ask the user to run outside it, every time (--sandbox-escape=ask); only the user's yes to that call runs it")
	} else {
		fmt.Fprintln(w, "outside the sandbox: never (--sandbox-escape=off)")
	}
	fmt.Fprint(w, wsLine)
	for _, l := range []struct {
		name  string
		paths []string
	}{{"writable", v.Writable}, {"private /tmp over", v.Private}, {"read-only inside writable", v.ReadOnly}, {"hidden", v.Hidden}} {
		fmt.Fprintf(w, "%s:\n", l.name)
		for _, p := range l.paths {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	for _, l := range []struct {
		name  string
		paths []string
	}{{"not hidden, within a writable path (the Landlock layer cannot hide them)", v.NotHidden},
		{"not read-only, within a writable path (the Landlock layer cannot protect them)", v.NotReadOnly}} {
		if len(l.paths) > 0 {
			fmt.Fprintf(w, "%s:\n  %s\n", l.name, strings.Join(l.paths, "\n  "))
		}
	}
	fmt.Fprintln(w, "everything else: read-only")
	if !strings.Contains(cont, "cgroup") {
		fmt.Fprintln(w, "note: no cgroup per command here; a command's processes are followed by process group")
	}
}

// unixSockets says which unix sockets commands reach.
func unixSockets(v sandbox.View) string {
	switch {
	case v.Layer == sandbox.LayerLandlock:
		return "none (socket(AF_UNIX) is refused; socketpair works)"
	case v.Network == sandbox.NetworkOn:
		return "the host's, outside the hidden paths, and the session's own"
	case v.FenceErr != "":
		return "none: " + v.FenceErr
	}
	return "the session's own (bound in its jail) only; the host's are refused"
}

// describeAllowlist writes the network allowlist's rules.
func describeAllowlist(w io.Writer, s *setup.Setup) {
	allow, deny := s.AllowlistRules()
	fmt.Fprintf(w, "network proxy: each jail reaches the network only through %s (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY), which lets through:\n", sandbox.ProxyAddr)
	for _, r := range allow {
		fmt.Fprintf(w, "  %s\n", r)
	}
	fmt.Fprintln(w, "and refuses:")
	for _, r := range deny {
		fmt.Fprintf(w, "  %s\n", r)
	}
	fmt.Fprintln(w, "  loopback, private and link-local addresses, and this host's own (also where a listed name resolves to one), unless an address rule above names them")
	fmt.Fprintln(w, "other hosts: asked about where the front end can ask (ACP, MCP elicitation, run on a terminal), else refused")
	describeForwards(w, s)
}

// describeForwards writes, for doctor, the host's services each jail
// has in its loopback.
func describeForwards(w io.Writer, s *setup.Setup) {
	if len(s.Forwards()) == 0 {
		fmt.Fprintln(w, "host services forwarded into each jail: none (a service on the host's loopback is allowed with its port: --allow-domain 127.0.0.1:5432, localhost:8080, [::1]:6379)")
		return
	}
	fmt.Fprintln(w, "host services forwarded into each jail, at the same address of its loopback, where any client reaches them (not through the proxy):")
	for i, f := range s.Forwards() {
		in := f.Addrs[0].String()
		if len(f.Addrs) > 1 {
			in = f.Addrs[0].String() + " and " + f.Addrs[1].String() + " (where the jail has IPv6)"
		}
		fmt.Fprintf(w, "  %s on the host -> %s in the jail\n", s.Forwarded()[i], in)
	}
}
