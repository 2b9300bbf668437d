package proctest

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// QuickRaceExit makes the Go programs this test process starts skip the
// race detector's pause at exit. A program built with -race sleeps one
// second when it exits (GORACE's atexit_sleep_ms, 1000 by default), so
// that reports of other threads get printed; a test that starts and ends
// dozens of such programs (the test binary re-executed as a helper, a
// jail's agent, a far side) would wait that second each time. Reports
// still print, and still fail the program: only the idle wait goes.
//
// Call it from TestMain, before any child is started. Children inherit it
// through the environment; a program started where the environment is not
// passed on (sshd) needs GORACE set there too. A GORACE of the user's own
// is kept, unless it sets atexit_sleep_ms itself.
func QuickRaceExit() {
	v := os.Getenv("GORACE")
	if strings.Contains(v, "atexit_sleep_ms") {
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(v+" atexit_sleep_ms=0"))
}

// BuildFlags are the flags of `go build` that build a program the way this
// one was built, so that a test building a binary of the module reuses
// the packages its own build compiled instead of compiling every
// dependency a second time.
func BuildFlags() []string {
	if Race {
		return []string{"-race"}
	}
	return nil
}

// RaiseParallel lets factor times GOMAXPROCS parallel tests run at once,
// unless -test.parallel was given. Call it from TestMain, before m.Run, in
// packages whose tests spend most of their time waiting on processes
// (grace periods, drain delays, far sides and jails starting), where the
// default of GOMAXPROCS leaves the machine idle.
func RaiseParallel(factor int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(factor*runtime.GOMAXPROCS(0)))
	}
}

// Long marks a test that only repeats, over another transport or with
// real toolchains, what quicker tests already check: go test -short skips
// it (a tier for iterating locally; CI runs everything).
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: repeats what quicker tests check")
	}
}
