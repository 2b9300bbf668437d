package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/dshgo/dsh/bash"
	"github.com/dshgo/dsh/bash/sandbox"
)

// versionLine is what dsh-bash --version prints.
func versionLine() string {
	return fmt.Sprintf("dsh-bash %s (%s, %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// doctorCmd prints what a session would get here with the same flags:
// where commands run, the sandbox and why, its layers, network and paths.
// It exits 0 when the executor could be made, else 1 (2 for bad usage).
func doctorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, ef := newFlags("doctor", stderr)
	cwd := fs.String("cwd", "", "the workspace to describe (default: the current directory)")
	if !parseNoArgs(fs, args, stderr) || !checkCwd("doctor", *cwd, stderr) {
		return 2
	}
	opts := ef.options()
	opts.Cwd = *cwd
	fmt.Fprint(stdout, versionLine())
	exec, code := ef.executor(ctx, "doctor", opts, stderr)
	if code != 0 {
		fmt.Fprintln(stdout, "executor: cannot be made with these settings (see above)")
		return code
	}
	defer ef.closeExecutor("doctor", exec, stderr)
	ws := *cwd
	if ws == "" {
		ws, _ = os.Getwd()
	}
	describe(stdout, exec, ws, &ef.sandbox)
	return 0
}

// limitText is text, or "none" for a zero limit.
func limitText(n int64, text string) string {
	if n == 0 {
		return "none"
	}
	return text
}

// describe writes the doctor's report on exec.
func describe(w io.Writer, exec bash.Executor, ws string, sf *sandboxFlags) {
	se, ok := exec.(*sandbox.Executor)
	if !ok {
		fmt.Fprintf(w, "containment: %s\n", containmentOf(exec))
		if sf.mode != "off" && sf.reason != "" {
			fmt.Fprintf(w, "sandbox: NOT active (--sandbox=%s): %s\n", sf.mode, sf.reason)
		} else {
			fmt.Fprintf(w, "sandbox: not active (--sandbox=%s)\n", sf.mode)
		}
		return
	}
	cont := se.Containment().String()
	fmt.Fprintf(w, "containment: sandbox, each command in a %s\n", cont)
	v := se.View(ws, os.Environ())
	if v.Layer == sandbox.LayerLandlock {
		fmt.Fprintf(w, "sandbox: active (--sandbox=%s): the Landlock layer, without a jail", sf.mode)
		if v.JailError != "" {
			fmt.Fprintf(w, " (%s)", v.JailError)
		}
		fmt.Fprintf(w, ": Landlock ABI %d restricts reads and writes, seccomp filter, no capabilities; not covered: %s\n", v.LandlockABI, landlockLacks)
	} else {
		fmt.Fprintf(w, "sandbox: active (--sandbox=%s): bubblewrap namespaces (user, pid, ipc, uts%s), no capabilities, seccomp filter\n",
			sf.mode, map[bool]string{true: ", net", false: ""}[v.Network != sandbox.NetworkOn])
	}
	if v.LandlockABI > 0 {
		fmt.Fprintf(w, "landlock: ABI %d (writes restricted by the kernel too)\n", v.LandlockABI)
	} else {
		fmt.Fprintln(w, "landlock: unavailable (writes restricted by the mounts alone)")
	}
	fmt.Fprintf(w, "network: %s\n", v.Network)
	if v.Network == sandbox.NetworkAllowlist {
		describeAllowlist(w, &sf.net)
	}
	fmt.Fprintf(w, "unix sockets: %s\n", unixSockets(v))
	fmt.Fprintf(w, "limits per session: memory %s, processes %s, /tmp %s, CPU %s\n",
		limitText(v.Memory, sandbox.ByteSize(v.Memory)), limitText(int64(v.Pids), strconv.Itoa(v.Pids)),
		map[bool]string{true: "not its own (TMPDIR is)", false: limitText(v.Tmp, sandbox.ByteSize(v.Tmp)+" in memory")}[v.Layer == sandbox.LayerLandlock],
		map[bool]string{true: "an equal share", false: "not shared out"}[v.CPUShared])
	if v.LimitsMissing != "" {
		fmt.Fprintf(w, "limits unavailable: %s\n", v.LimitsMissing)
	}
	if sf.offersEscape() {
		fmt.Fprintln(w, "outside the sandbox: a call of acp or mcp may ask the user to run outside it, every time (--sandbox-escape=ask); only the user's yes to that call runs it")
	} else {
		fmt.Fprintln(w, "outside the sandbox: never (--sandbox-escape=off)")
	}
	fmt.Fprintf(w, "workspace: %s\n", ws)
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
func describeAllowlist(w io.Writer, n *netFlags) {
	allow, deny := n.rules()
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
	describeForwards(w, n)
}
