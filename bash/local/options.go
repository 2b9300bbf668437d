package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dshgo/dsh/permission"
)

// Containment chooses how an executor keeps each command's processes together.
type Containment int

const (
	// ContainAuto uses a cgroup when the host allows one, else process groups.
	ContainAuto Containment = iota
	// ContainCgroup requires a cgroup; New fails without one.
	ContainCgroup
	// ContainProcessGroup uses process groups even where cgroups work.
	ContainProcessGroup
)

// String names the mechanism: "auto", "cgroup" or "process group".
func (c Containment) String() string {
	switch c {
	case ContainAuto:
		return "auto"
	case ContainCgroup:
		return "cgroup"
	case ContainProcessGroup:
		return "process group"
	}
	return fmt.Sprintf("Containment(%d)", int(c))
}

// Options configures an Executor. A nil *Options, and every zero field, means
// the default named on the field. Negative values are an error.
type Options struct {
	// Cwd is the working directory of a request that names none, and the
	// base of a relative one. Default: the process cwd at New.
	Cwd string
	// Timeout is the default foreground timeout. Default 120 s.
	Timeout time.Duration
	// MaxTimeout caps a requested timeout. Default 600 s (or Timeout, if
	// that is set higher); when only MaxTimeout is set below 120 s, Timeout
	// defaults to it. Setting both with Timeout above MaxTimeout is an error.
	MaxTimeout time.Duration
	// MaxOutputBytes is how much of each stream is kept in memory. Default
	// 64000.
	MaxOutputBytes int
	// Grace is how long SIGTERM is given before SIGKILL. Default 3 s.
	Grace time.Duration
	// ReapBound is how long a stopped command may take, after SIGKILL, to be
	// gone (shell reaped, processes exited, output pipes closed), like
	// os/exec's Cmd.WaitDelay: past it, a process stuck in the kernel or
	// one outside the command's cgroup or process group holding its pipes
	// is waited for no more; the pipes are closed and the timeout, Kill or
	// Close that stopped it returns. Threads of the shell that died as this
	// process's tracees (PTRACE_TRACEME) are reaped then too, as only their
	// tracer can. Default 2 s.
	ReapBound time.Duration
	// DrainDelay is how long a foreground run waits, after its shell exited,
	// for the pipes to close and the processes to end before it adopts what
	// is left as a background task. If by then no process of the command is
	// alive, it waits up to ReapBound more for its output to be read (the
	// readers may be behind on a loaded machine) and adopts only what still
	// holds the pipes then. Default 250 ms.
	DrainDelay time.Duration
	// MaxTasksPerOwner and MaxTasks limit running background tasks (adopted
	// ones included), per owner token and in all. Defaults 16 and 64.
	MaxTasksPerOwner, MaxTasks int
	// MaxFinishedTasks is how many ended tasks are remembered; past it the
	// oldest is forgotten and its spill files removed. Default 256.
	MaxFinishedTasks int
	// SpillDir is where the executor's private spill directory is made.
	// Default: os.TempDir().
	SpillDir string
	// MaxSpillBytes caps one spill file; past it the file is withdrawn.
	// Default 1 GiB.
	MaxSpillBytes int64
	// SpillBudget caps all spill files on disk together. To make room, the
	// oldest complete files are evicted (a read no longer names them); a file
	// still being written is withdrawn only when no complete one is left to
	// evict. Default 4 GiB.
	SpillBudget int64
	// KeepSpillFiles leaves complete spill files on disk after Close (for a
	// one-shot CLI that prints their paths).
	KeepSpillFiles bool
	// Env holds extra "NAME=value" entries for every command, added after
	// the scrubbing and the overrides.
	Env []string
	// AllowEnv names variables passed through although they look like
	// credentials (by name or by value; see the package doc). It cannot name
	// BASH_ENV, ENV, SHELLOPTS, BASHOPTS or a BASH_FUNC_ variable, which
	// change what bash runs: New refuses that. Env can still set them.
	AllowEnv []string
	// BaseEnv replaces os.Environ() as the environment that is scrubbed.
	BaseEnv []string
	// Shell is the bash binary, a path or a name looked up in PATH.
	// Default "bash".
	Shell string
	// Containment picks cgroups or process groups. Default ContainAuto.
	Containment Containment
	// NoInputProbe stops the executor from reading the kernel's state of
	// a task's processes to know when it waits for input: every
	// WriteInput then returns once the output has settled (Input.Settle),
	// as on a system where that state cannot be read. For comparison and
	// for tests.
	NoInputProbe bool
	// ExecRules, if it has rules, are deny rules enforced at every exec of
	// every command's process tree, on the program the kernel loaded and
	// the argv it got (see permission.ExecRules and bash/execguard): a
	// refused program is killed before its first instruction, and the
	// result lists it (RunResult.Refused). They hold for Unsandboxed
	// commands too. Tracing every process has a cost (see execguard);
	// nil means no exec is checked.
	ExecRules *permission.ExecRules
	// Spawn, if set, starts each command's shell in place of os/exec on this
	// host (see SpawnFunc): a sandbox starts it inside its jail. Default:
	// os/exec.
	Spawn SpawnFunc
}

func (o *Options) defaults() error {
	if err := o.validate(); err != nil {
		return err
	}
	o.fillDurations()
	o.fillSizes()
	if o.Shell == "" {
		o.Shell = "bash"
	}
	if o.SpillDir == "" {
		o.SpillDir = os.TempDir()
	}
	if o.Spawn == nil {
		o.Spawn = SpawnExec
	}
	if o.Timeout > o.MaxTimeout {
		return fmt.Errorf("invalid executor options: Timeout %v is above MaxTimeout %v", o.Timeout, o.MaxTimeout)
	}
	return o.fillCwd()
}

// fillSizes sets the counts and sizes left at zero.
func (o *Options) fillSizes() {
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&o.MaxOutputBytes, 64000)
	setInt(&o.MaxTasksPerOwner, 16)
	setInt(&o.MaxTasks, 64)
	setInt(&o.MaxFinishedTasks, 256)
	if o.MaxSpillBytes == 0 {
		o.MaxSpillBytes = 1 << 30
	}
	if o.SpillBudget == 0 {
		o.SpillBudget = 4 << 30
	}
}

// fillCwd makes Cwd absolute, the process cwd when unset.
func (o *Options) fillCwd() error {
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("find the working directory: %w", err)
		}
		o.Cwd = wd
	}
	abs, err := filepath.Abs(o.Cwd)
	if err != nil {
		return fmt.Errorf("invalid executor options: Cwd: %w", err)
	}
	o.Cwd = abs
	return nil
}

// validate reports every value that is out of range.
func (o *Options) validate() error {
	var bad []string
	neg := func(name string, v int64) {
		if v < 0 {
			bad = append(bad, fmt.Sprintf("%s must not be negative (got %d)", name, v))
		}
	}
	neg("Timeout", int64(o.Timeout))
	neg("MaxTimeout", int64(o.MaxTimeout))
	neg("MaxOutputBytes", int64(o.MaxOutputBytes))
	neg("Grace", int64(o.Grace))
	neg("ReapBound", int64(o.ReapBound))
	neg("DrainDelay", int64(o.DrainDelay))
	neg("MaxTasksPerOwner", int64(o.MaxTasksPerOwner))
	neg("MaxTasks", int64(o.MaxTasks))
	neg("MaxFinishedTasks", int64(o.MaxFinishedTasks))
	neg("MaxSpillBytes", o.MaxSpillBytes)
	neg("SpillBudget", o.SpillBudget)
	if o.Containment < ContainAuto || o.Containment > ContainProcessGroup {
		bad = append(bad, fmt.Sprintf("Containment %d is not one of the defined values", o.Containment))
	}
	if err := checkAllowEnv(o.AllowEnv); err != nil {
		bad = append(bad, err.Error())
	}
	for _, kv := range o.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			bad = append(bad, fmt.Sprintf("Env entry %q is not NAME=value", kv))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("invalid executor options: %s", strings.Join(bad, "; "))
	}
	return nil
}

// fillDurations sets the durations left at zero.
func (o *Options) fillDurations() {
	set := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	// A default left unset follows a maximum that was set, and the other
	// way round; only two set values can contradict each other.
	switch {
	case o.Timeout == 0 && o.MaxTimeout != 0:
		o.Timeout = min(120*time.Second, o.MaxTimeout)
	case o.MaxTimeout == 0 && o.Timeout != 0:
		o.MaxTimeout = max(600*time.Second, o.Timeout)
	}
	set(&o.Timeout, 120*time.Second)
	set(&o.MaxTimeout, 600*time.Second)
	set(&o.Grace, 3*time.Second)
	set(&o.ReapBound, 2*time.Second)
	set(&o.DrainDelay, 250*time.Millisecond)
}
