//go:build linux

package testwait

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFIFO: a line written by a writer that opens the FIFO before or
// after the reader is read whole, and WriteFIFO reaches a reader.
func TestFIFO(t *testing.T) {
	fifo := mkfifo(t)
	wrote := make(chan error, 1)
	go func() { // opens first: blocks until ReadFIFO opens
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("1234\n")
			f.Close()
		}
		wrote <- err
	}()
	if got := ReadFIFO(t, fifo, "the pid"); got != "1234" {
		t.Errorf("ReadFIFO: %q", got)
	}
	if err := Recv(t, wrote, "end of the write"); err != nil {
		t.Fatal(err)
	}
	read := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until WriteFIFO opens
		if err != nil {
			read <- err.Error()
			return
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		read <- line
	}()
	WriteFIFO(t, fifo, "go", "the reader")
	if got := Recv(t, read, "line read"); got != "go\n" {
		t.Errorf("the reader got %q", got)
	}
}

// TestLines: lines come in order, a last one without a newline too, then
// the stream's end.
func TestLines(t *testing.T) {
	r, w := io.Pipe()
	l := NewLines(r)
	go func() {
		io.WriteString(w, "one\ntwo\nthr")
		io.WriteString(w, "ee")
		w.Close()
	}()
	for _, want := range []string{"one\n", "two\n", "three"} {
		if got, err := l.Next(t, "line"); got != want || err != nil {
			t.Errorf("Next: %q, %v; want %q", got, err, want)
		}
	}
	if got, err := l.Next(t, "end"); got != "" || err != io.EOF {
		t.Errorf("at the end: %q, %v", got, err)
	}
	if got := l.Last(); got != "last lines read:\n\tone\n\ttwo\n\tthree" {
		t.Errorf("Last: %q", got)
	}
}
