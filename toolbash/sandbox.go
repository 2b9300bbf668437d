package toolbash

import "strings"

// SandboxFacts are what a sandbox lets commands do, for SandboxText.
type SandboxFacts struct {
	// NetworkOff: commands reach no network beyond their own loopback.
	NetworkOff bool
	// Allowlist, where set, is the network allowlist: commands reach the
	// network only through the sandbox's proxy, which lets these hosts
	// through; AsksNetwork, that it asks the user about the others.
	Allowlist   []string
	AsksNetwork bool
	// Forwarded, with the allowlist, are the services on the host the
	// user allowed ("127.0.0.1:5432", "localhost:8080"): each is forwarded
	// to the same address in the sandbox, where any client reaches it.
	Forwarded []string
	// LockCaches: the tool caches of the home directory are read-only.
	LockCaches bool
	// Writable are further paths commands may change; ReadOnly, further
	// read-only ones (both as the user configured them).
	Writable, ReadOnly []string
	// TmpSize is the size of the session's private /tmp, which is kept
	// in memory ("4 GiB"); "" where it is not known.
	TmpSize string
	// Landlock: the sandbox is the Landlock layer, without a jail: /tmp
	// is read-only (TMPDIR is the session's), and .git is not protected.
	Landlock bool
	// Unsandboxed: the model's bash calls may ask the user to run outside
	// the sandbox (the argument of Options.AskUnsandboxed).
	Unsandboxed bool
}

// SandboxText tells the model what the sandbox its commands run in allows,
// so that it asks the user for what the sandbox refuses instead of
// retrying: an MCP server's instructions, an agent's system prompt.
func SandboxText(f SandboxFacts) string {
	var b strings.Builder
	if f.Landlock {
		b.WriteString("Commands run in a sandbox (its Landlock layer: they see the host's processes and network). They may change the workspace and $TMPDIR (a directory private to this session, removed when it ends; /tmp itself is read-only, so write temporary files to $TMPDIR)")
	} else {
		b.WriteString("Commands run in a sandbox. They may change the workspace and /tmp (private to this session, removed when it ends")
		if f.TmpSize != "" {
			b.WriteString("; kept in memory and at most " + f.TmpSize + ", so put large files in the workspace")
		}
		b.WriteString(")")
	}
	if !f.LockCaches {
		b.WriteString(", and the tool caches (~/.cache, ~/go, ~/.npm, ~/.cargo, … and those GOCACHE, GOPATH, CARGO_HOME and the like name)")
	}
	if len(f.Writable) > 0 {
		b.WriteString(", and " + strings.Join(f.Writable, ", "))
	}
	b.WriteString("; everything else is read-only, and credentials (~/.ssh, ~/.aws, ~/.config/gh, …) are hidden. ")
	if !f.Landlock {
		b.WriteString("In the workspace, .git/config and .git/hooks are read-only too: git config, git remote add and installing hooks fail there with \"Device or resource busy\" or \"Read-only file system\"")
		if len(f.ReadOnly) > 0 {
			b.WriteString(", as do changes to " + strings.Join(f.ReadOnly, ", "))
		}
		b.WriteString(". ")
	} else {
		b.WriteString("Writes elsewhere fail with \"Permission denied\". ")
	}
	b.WriteString("Do not retry or work around such a refusal: ")
	if f.Unsandboxed {
		b.WriteString("if the user wants it done, call bash again with unsandboxed: true, which asks the user to run that one call outside the sandbox (never set it first, or after other errors), or ")
	}
	b.WriteString("ask the user to run that command. ")
	switch {
	case f.Allowlist != nil:
		b.WriteString(allowlistText(f))
	case f.NetworkOff:
		b.WriteString("The network is off: downloads (npm install, pip install, go mod download, git fetch, curl) fail or hang until their timeout, so ask the user to run them.")
	default:
		b.WriteString("The network is on.")
	}
	b.WriteString(unixSocketsText(f))
	return b.String()
}

// unixSocketsText tells the model which unix sockets its commands reach.
func unixSocketsText(f SandboxFacts) string {
	switch {
	case f.Landlock:
		return ` Commands cannot make unix sockets (socket(AF_UNIX) fails with "Operation not permitted"; socketpair works).`
	case f.NetworkOff || f.Allowlist != nil:
		return ` Unix sockets work between this session's own programs (bind them in /tmp; in the workspace some file systems refuse them); those of services on the host (docker, the Nix daemon, …) are refused with "Permission denied": ask the user to run what needs them.`
	}
	return " Services on the host are within reach too: on its loopback, and by their unix sockets outside the hidden paths."
}

// allowlistText tells the model about the network allowlist.
func allowlistText(f SandboxFacts) string {
	hosts := "none"
	if len(f.Allowlist) > 0 {
		hosts = strings.Join(f.Allowlist, ", ")
	}
	others := "others are refused"
	if f.AsksNetwork {
		others = "the user is asked about others where your client can ask, else they are refused"
	}
	return "The network goes only through the sandbox's proxy, which HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name (curl, git over HTTPS, npm, pip, go and cargo use it; git over SSH and other clients that ignore those variables cannot use it): it lets through the hosts on the allowlist (" + hosts + "); " + others +
		"; loopback, private and link-local addresses (services on the host, cloud metadata) are refused unless the allowlist names them, and localhost is the sandbox's own (servers you start there)" + forwardedText(f.Forwarded) +
		". A refused connection fails (HTTP 403 from the proxy) and a note beside the result says why: do not try to reach the host another way, ask the user to allow it."
}

// forwardedText says where the model finds each service on the host the
// user allowed.
func forwardedText(services []string) string {
	if len(services) == 0 {
		return ""
	}
	each := make([]string, len(services))
	for i, s := range services {
		each[i] = s + " on the host is forwarded to " + s + " in the sandbox"
	}
	return ", except the services on the host the user allowed, which any client (psql, JDBC, redis-cli, curl) reaches there directly, not through the proxy: " + strings.Join(each, "; ")
}

// allows says in a sentence what the sandbox already lets commands do, for
// the unsandboxed argument's description: what needs no escape.
func (f SandboxFacts) allows() string {
	places := []string{"the workspace", "/tmp"}
	if f.Landlock {
		places[1] = "$TMPDIR"
	}
	if !f.LockCaches {
		places = append(places, "the tool caches")
	}
	places = append(places, f.Writable...)
	net := "reach the network"
	switch {
	case f.Allowlist != nil && f.AsksNetwork:
		net = "reach the network through its proxy, which lets the hosts of its allowlist through and asks the user about others"
	case f.Allowlist != nil:
		net = "reach the network through its proxy, which lets only the hosts of its allowlist through"
	case f.NetworkOff:
		net = "reach only their own loopback, no network"
	}
	if f.Allowlist != nil && len(f.Forwarded) > 0 {
		net += ", and the services on the host forwarded into it (" + strings.Join(f.Forwarded, ", ") + ")"
	}
	last := len(places) - 1
	return "The sandbox already lets commands write to " + strings.Join(places[:last], ", ") + " and " + places[last] + ", and " + net + ": none of that needs this argument."
}

// ExecDenyText tells the model that deny rules hold where programs start,
// added to its instructions when the user has deny rules.
const ExecDenyText = "Deny rules are enforced where programs start, not only where the command is read: " +
	"a program a deny rule names is refused however it is reached (a variable, a script, xargs, make, a subprocess), " +
	"and the result says [refused by deny rule `…`: …]. Do not look for another way to run it: ask the user."
