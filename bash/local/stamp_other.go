//go:build !linux

package local

// selfStamp is "": without /proc there is no start time to tell a live owner
// from a reused pid, so no directory is stamped.
func selfStamp() string { return "" }
