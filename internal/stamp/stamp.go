// Package stamp names the directories a dsh process makes after the process
// itself, "PID-START", so that a later process can tell, once the maker is
// dead, that they were left behind and may be removed.
//
// START is when the process started (field 22 of /proc/PID/stat, in clock
// ticks since boot): a pid alone may be reused by another process once the
// maker is gone, the pair is not. Off Linux, and where /proc cannot tell,
// Self is "" and callers stamp nothing.
package stamp

import "regexp"

// Stale reports whether name matches re, whose first two groups are a
// stamp's pid and start time, and names a process that is gone.
func Stale(re *regexp.Regexp, name string) bool {
	m := re.FindStringSubmatch(name)
	return m != nil && len(m) > 2 && Dead(m[1], m[2])
}
