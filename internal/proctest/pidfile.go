package proctest

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dshgo/dsh/internal/testwait"
)

// PidFromFile reads the pid a command wrote to a file.
func PidFromFile(t testing.TB, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return parsePid(t, file, string(b))
}

// PidFromFIFO waits until a command writes a line holding a pid to the
// FIFO, and returns the pid: the test then knows the command got that far.
// If none comes within testwait.Limit, the test fails.
func PidFromFIFO(t testing.TB, fifo string) int {
	t.Helper()
	return parsePid(t, fifo, testwait.ReadFIFO(t, fifo, "pid from the command"))
}

func parsePid(t testing.TB, name, s string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("%s holds no pid: %q", name, s)
	}
	return pid
}
