package proctest

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// UntracedClones are perl programs (for perl -e) that start a child its
// tracer is not told of, which runs `zap MARK`: clone with CLONE_UNTRACED,
// and clone3 with it (its flags behind a pointer). They attack a check of
// every exec done by tracing.
func UntracedClones(mark string) map[string]string {
	child := fmt.Sprintf(`if ($pid == 0) { exec { "zap" } "zap", "%s"; exit 127 } waitpid($pid, 0) if $pid > 0; print "pid $pid\n";`, mark)
	return map[string]string{
		"clone":  fmt.Sprintf(`my $pid = syscall(%d, 0x00800000 | 17, 0, 0, 0, 0); `, unix.SYS_CLONE) + child,
		"clone3": fmt.Sprintf(`my $a = pack("Q8", 0x00800000, 0, 0, 0, 17, 0, 0, 0); my $pid = syscall(%d, $a, 64); `, unix.SYS_CLONE3) + child,
	}
}
