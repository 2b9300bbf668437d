package proctest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
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
func PidFromFIFO(t testing.TB, fifo string) int {
	t.Helper()
	f, err := os.Open(fifo) // blocks until the command opens it to write
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return parsePid(t, fifo, line)
}

func parsePid(t testing.TB, name, s string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("%s holds no pid: %q", name, s)
	}
	return pid
}
