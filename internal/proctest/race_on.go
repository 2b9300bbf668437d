//go:build race

package proctest

// Race reports whether this program was built with the race detector.
const Race = true
