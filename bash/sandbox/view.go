package sandbox

// View is what the commands of a session's jail may see and change, as the
// jail is set up (for users: dsh-bash doctor). Paths that do not exist are
// left out, as the jail leaves them out.
type View struct {
	// Layer is the sandbox's layer; JailError, in the Landlock layer,
	// why there is no jail.
	Layer     Layer
	JailError string
	// Writable are bound read-write; everything else is read-only.
	Writable []string
	// Private are the host directories each jail gets a private, empty
	// /tmp in place of (/tmp and the executor's temporary directories),
	// each at most Tmp bytes large (0: the kernel's default). The Landlock
	// layer has none: each session's TMPDIR is a directory of its own, on
	// the host's disk, and /tmp is hidden.
	Private []string
	Tmp     int64
	// ReadOnly stay read-only inside writable paths (in the jail only).
	ReadOnly []string
	// Hidden are replaced by empty ones.
	Hidden []string
	// NotHidden and NotReadOnly, in the Landlock layer, are the hidden
	// and the policy's read-only paths it cannot honour: they lie within
	// a writable path (the workspace, a cache, Policy.Writable), and a
	// Landlock rule only adds rights, so they stay visible and writable
	// there. The jail honours them (and lists none).
	NotHidden, NotReadOnly []string
	// Network is the jail's network. Where it is not NetworkOn, a jail's
	// commands reach the unix sockets their session binds and no other
	// (see the package doc), unless FenceErr says why the kernel cannot
	// tell them apart here, and the jail refuses unix sockets altogether.
	Network  Network
	FenceErr string
	// UsernsErr, in the Landlock layer, says why its commands can make
	// user namespaces where the system lets them (its agent could not
	// supervise their clone3). Empty: they cannot, as in a jail.
	UsernsErr string
	// LandlockABI is the kernel's Landlock ABI version, which the agent
	// restricts writes with too (0: none, the bind mounts alone).
	LandlockABI int
	// Memory and Pids are each session's limits where they apply (0:
	// none); LimitsMissing says why one that was asked for does not.
	Memory        int64
	Pids          int
	LimitsMissing string
	// CPUShared: each session has the same share of the CPU, however many
	// processes it runs.
	CPUShared bool
}

// String is "on", "off" or "allowlist".
func (n Network) String() string {
	switch n {
	case NetworkOff:
		return "off"
	case NetworkAllowlist:
		return "allowlist"
	}
	return "on"
}
