package testwait

import (
	"bufio"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// ReadFIFO waits for a command to write a line to the FIFO, and returns
// the line without its newline: the test then knows the command got that
// far. If no line comes within Limit, the test fails, saying it waited for
// what (a noun phrase: "the pid of the background sleep").
//
// The FIFO is opened for reading and writing, which never blocks (opening
// it only to read would wait for a writer, with no deadline), and read
// with a deadline; a command that opens it to write goes on at once.
func ReadFIFO(t testing.TB, fifo, what string) string {
	t.Helper()
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.SetReadDeadline(time.Now().Add(Limit)); err != nil {
		t.Fatalf("FIFO %s: %v", fifo, err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("no %s within %v (a line in FIFO %s; read so far: %q)", what, Limit, fifo, line)
	}
	if err != nil {
		t.Fatalf("FIFO %s: %v (read %q)", fifo, err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// WriteFIFO writes line, and a newline, to the FIFO once a command opens
// it to read (`read < FIFO`): that lets the command go on. If no command
// opens it within Limit, the test fails, saying it was to release what (a
// noun phrase: "the blocked foreground command").
func WriteFIFO(t testing.TB, fifo, line, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until a reader opens it
		if err != nil {
			done <- err
			return
		}
		_, err = f.WriteString(line + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	timer := time.NewTimer(Limit)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("FIFO %s: %v", fifo, err)
		}
		return
	case <-timer.C:
	}
	// Open it as a reader ourselves, which never blocks, so that the
	// writer's open returns.
	if r, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
		<-done
		r.Close()
	}
	t.Fatalf("nothing opened FIFO %s to read within %v: %s is not waiting on it", fifo, Limit, what)
}
