package sandbox

import (
	"strconv"
	"strings"
)

// Limits bound what the commands of one session (one jail) may use
// together, so that one session cannot starve the others or the server.
// The zero Limits is the default described on each field; a negative
// field means no limit. Where the host offers no cgroup controller to
// enforce a limit with, it does not apply (dsh-bash doctor says so).
type Limits struct {
	// Memory is the most memory, in bytes, the session's processes may
	// use together; past it the kernel kills one of them, and the model
	// reads that the memory limit ended its command. Default: a quarter
	// of the machine's memory, at least 1 GiB.
	Memory int64
	// Pids is the most processes and threads the session may have at
	// once; past it fork fails (a fork bomb stops there). Default 4096.
	Pids int
	// Tmp is the most bytes the session's private /tmp may hold (each of
	// them, where the executor's temporary directories get one too): a
	// file system in memory, whose pages count against Memory too; past
	// it a write fails with "No space left on device". Default: half of
	// Memory (or of Memory's default, where Memory is negative). This
	// one applies wherever the jail does.
	Tmp int64
}

// DefaultPids is Limits.Pids by default.
const DefaultPids = 4096

// withDefaults fills in the zero fields; total is the machine's memory.
func (l Limits) withDefaults(total int64) Limits {
	memory := max(total/4, 1<<30)
	if l.Memory == 0 {
		l.Memory = memory
	}
	if l.Tmp == 0 {
		l.Tmp = memory / 2
		if l.Memory > 0 {
			l.Tmp = l.Memory / 2
		}
	}
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	return l
}

// ByteSize writes n bytes as the model reads a limit: "2 GiB", "512 MiB".
func ByteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64), ".0") + " GiB"
	case n >= 1<<20:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64), ".0") + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
