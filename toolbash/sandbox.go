package toolbash

import "strings"

// SandboxFacts are what a sandbox lets commands do, for SandboxText.
type SandboxFacts struct {
	// NetworkOff: commands reach no network beyond their own loopback.
	NetworkOff bool
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
	b.WriteString("Do not retry or work around such a refusal: ask the user to run that command. ")
	if f.NetworkOff {
		b.WriteString("The network is off: downloads (npm install, pip install, go mod download, git fetch, curl) fail or hang until their timeout, so ask the user to run them.")
	} else {
		b.WriteString("The network is on.")
	}
	return b.String()
}
