package permission

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestEveryWrapperPassesOnDeny: every wrapper of the table, followed by
// a denied command, is denied, whatever its options and operands (rows
// made from the table itself, so a wrapper dropped from it, or added
// without its operands, fails here).
func TestEveryWrapperPassesOnDeny(t *testing.T) {
	p := testPolicy(t)
	var names []string
	for name := range wrappers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		w := wrappers[name]
		var operands []string
		if w.lockFile {
			operands = append(operands, "lockfile")
		}
		for range w.operands {
			operands = append(operands, "1")
		}
		for _, words := range [][]string{
			slices.Concat([]string{name}, operands, []string{"rm", "x"}),
			slices.Concat([]string{name}, operands, []string{"/bin/rm", "-rf", "x"}),
			slices.Concat([]string{name, "--"}, operands, []string{"rm", "x"}),
		} {
			cmd := strings.Join(words, " ")
			if v := p.Check(cmd, "/w", "/w"); v.Decision != Deny {
				t.Errorf("Check(%q) = %v (%s), want deny", cmd, v.Decision, v.Reason)
			}
		}
	}
	// As people write them: the operands the table must know of.
	for _, cmd := range []string{"setsid rm x", "ionice -c3 rm x", "chrt 10 rm x", "chrt -r 10 rm x",
		"taskset 0x1 rm x", "taskset -c 0 rm x", "unbuffer rm x", "timeout 5 rm x", "timeout -s KILL 5 rm x",
		"nice -n 5 rm x", "flock /tmp/l rm x", "stdbuf -oL rm x", "nohup rm x", "env A=1 rm x"} {
		if v := p.Check(cmd, "/w", "/w"); v.Decision != Deny {
			t.Errorf("Check(%q) = %v (%s), want deny", cmd, v.Decision, v.Reason)
		}
	}
	for _, name := range []string{"env", "nice", "nohup", "setsid", "ionice", "chrt", "taskset", "unbuffer", "timeout", "stdbuf", "xargs", "flock", "sudo"} {
		if _, ok := wrappers[name]; !ok {
			t.Errorf("%s is not in the wrapper table", name)
		}
	}
}
