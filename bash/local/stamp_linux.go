//go:build linux

package local

import "github.com/dshgo/dsh/internal/stamp"

// selfStamp names this process in the directories it makes, "PID-START"
// (see package internal/stamp), or "" when /proc cannot tell: then no
// directory is stamped, so CleanStale never takes one of ours for stale.
func selfStamp() string { return stamp.Self() }

// procStartTime reads when process pid started from /proc/PID/stat.
func procStartTime(pid int) (uint64, error) { return stamp.StartTime(pid) }

// parseStartTime reads field 22 of a /proc/PID/stat text.
func parseStartTime(stat []byte) (uint64, error) { return stamp.ParseStartTime(stat) }
