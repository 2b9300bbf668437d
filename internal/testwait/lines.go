package testwait

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// keep is how many of the last lines read Lines keeps for its failure
// messages.
const keep = 5

// Lines reads the lines of a stream (a pipe from a server, a process's
// output) in a goroutine of its own, so that a test can wait for the next
// one with a deadline. The goroutine reads on until the stream ends (the
// test closes it, or its writer goes), whether the test reads the lines or
// not: a writer is never held up by it.
type Lines struct {
	mu    sync.Mutex
	queue []string      // read, not yet taken
	err   error         // what ended the stream, once it ended
	last  []string      // the last lines read, oldest first
	more  chan struct{} // gets a value when queue grows or err is set
}

// NewLines starts reading r.
func NewLines(r io.Reader) *Lines {
	l := &Lines{more: make(chan struct{}, 1)}
	go l.read(bufio.NewReaderSize(r, 64<<10))
	return l
}

func (l *Lines) read(r *bufio.Reader) {
	for {
		line, err := r.ReadString('\n')
		l.mu.Lock()
		if line != "" {
			l.queue = append(l.queue, line)
			l.last = append(l.last, line)
			if len(l.last) > keep {
				l.last = l.last[1:]
			}
		}
		if err != nil {
			l.err = err
		}
		l.mu.Unlock()
		select {
		case l.more <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// Next returns the next line, with its newline if it had one, or, once
// every line has been taken, the error that ended the stream (io.EOF at
// its end). If neither comes within Limit, the test fails, saying it
// waited for what (a noun phrase: "reply to request 7") and what the last
// lines read were.
func (l *Lines) Next(t testing.TB, what string) (string, error) {
	t.Helper()
	timer := time.NewTimer(Limit)
	defer timer.Stop()
	for {
		l.mu.Lock()
		if len(l.queue) > 0 {
			line := l.queue[0]
			l.queue = l.queue[1:]
			l.mu.Unlock()
			return line, nil
		}
		err := l.err
		l.mu.Unlock()
		if err != nil {
			return "", err
		}
		select {
		case <-l.more:
		case <-timer.C:
			t.Fatalf("no %s within %v; %s", what, Limit, l.Last())
		}
	}
}

// Last describes the last lines read, for a failure message.
func (l *Lines) Last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.last) == 0 {
		return "no line read yet"
	}
	var b strings.Builder
	b.WriteString("last lines read:")
	for _, s := range l.last {
		fmt.Fprintf(&b, "\n\t%s", clip(strings.TrimRight(s, "\n")))
	}
	return b.String()
}

// clip shortens a long line for a message.
func clip(s string) string {
	const most = 300
	if len(s) <= most {
		return s
	}
	return s[:most] + fmt.Sprintf("… (%d bytes)", len(s))
}
