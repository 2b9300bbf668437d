// Package audit writes the events of package observe to a file, one JSON
// object per line: an audit log of who ran what, decided how, that an
// operator can keep, rotate and search.
//
// Open a Log, give its Sink to the server (observe.Tee it with others),
// call Reopen when the file was moved away (SIGHUP after logrotate), and
// Close at exit:
//
//	log, err := audit.Open("/var/log/dsh/audit.log", nil)
//	…
//	defer log.Close()
//	srv := mcpserver.New(x, &mcpserver.Options{Observe: log.Sink()})
//
// The lines, and every field of each, are listed in lines.go and in
// docs/operations.md. A command's output is never in them (events carry
// none); commands, descriptions, errors and refused argvs are scrubbed of
// the secrets that ScrubCommand and ScrubText find first.
//
// A Log never holds up the work it records: the Sink hands each event to a
// bounded queue that one goroutine writes out, and drops (and counts) what
// does not fit. A write that fails (a full disk) loses its line, and is
// reported once per streak of failures through Options.Errorf, and again
// when writing works again; the log itself then gets an "audit_dropped"
// line with the count of what is missing.
package audit

import (
	"cmp"
	"errors"
	"fmt"
	"log"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dshgo/dsh/observe"
)

// Options configure a Log. The zero value (and nil) are the defaults.
type Options struct {
	// QueueSize is how many events may wait for the writer; an event
	// that finds the queue full is dropped and counted. Default 4096.
	QueueSize int
	// CloseTimeout bounds how long Close writes what is queued before it
	// gives up on the rest. Default 5 s.
	CloseTimeout time.Duration
	// Errorf reports what goes wrong after Open: a file that cannot be
	// written (once, until writing works again, which is reported too)
	// and events dropped for a full queue (once per streak, and when the
	// writer caught up). It is called from the log's own goroutine.
	// Default: log.Printf.
	Errorf func(format string, args ...any)
}

// Defaults of Options.
const (
	DefaultQueueSize    = 4096
	DefaultCloseTimeout = 5 * time.Second
)

// ErrClosed is returned by Reopen and Close on a closed Log.
var ErrClosed = errors.New("audit log closed")

// A Log is an audit log file being written. Its methods are safe for
// concurrent use.
type Log struct {
	path         string
	errorf       func(string, ...any)
	closeTimeout time.Duration

	mu      sync.Mutex // guards the fields below, and sends on queue
	closed  bool
	seq     uint64     // the last event's sequence number
	pending []reopened // files Reopen opened, for the writer to take
	queue   chan queued

	wake    chan struct{} // tells the writer a file is pending
	done    chan struct{} // closed when the writer has returned
	abandon atomic.Bool   // Close gave up waiting: drop what is left
	dropped atomic.Int64  // events that are not in the log, for any reason
	full    atomic.Int64  // dropped for a full queue, not yet in the log

	fileMu sync.Mutex // guards file; the writer's, but for Close's timeout
	file   *os.File

	w writer // the writer goroutine's own state
}

// queued is an event and its sequence number.
type queued struct {
	seq uint64
	ev  observe.Event
}

// reopened is a file Reopen opened, for the events after the after'th.
type reopened struct {
	f     *os.File
	after uint64
}

// Open opens (creating it, mode 0600) the log file at path for appending,
// and starts the log's writer. A path that cannot be opened for writing is
// an error, naming the path and the reason.
func Open(path string, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.QueueSize < 0 || o.CloseTimeout < 0 {
		return nil, fmt.Errorf("audit log: QueueSize and CloseTimeout must not be negative (got %d, %v)", o.QueueSize, o.CloseTimeout)
	}
	f, err := openFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	l := &Log{path: path, errorf: o.Errorf, closeTimeout: o.CloseTimeout, file: f,
		queue: make(chan queued, cmp.Or(o.QueueSize, DefaultQueueSize)),
		wake:  make(chan struct{}, 1), done: make(chan struct{})}
	if l.errorf == nil {
		l.errorf = log.Printf
	}
	if l.closeTimeout == 0 {
		l.closeTimeout = DefaultCloseTimeout
	}
	go l.run()
	return l, nil
}

// openFile opens path to append, mode 0600 if it makes it. A FIFO no one
// reads is an error (ENXIO), not a wait.
func openFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|openNonblock, 0o600)
}

// Sink is the sink that records events in the log. It never blocks: it
// copies the event into the queue, or, when the queue is full or the log
// closed, drops it and counts it.
func (l *Log) Sink() observe.Sink { return l.emit }

func (l *Log) emit(e observe.Event) {
	c := snapshot(e)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.dropped.Add(1)
		return
	}
	l.seq++
	select {
	case l.queue <- queued{l.seq, c}:
	default:
		l.dropped.Add(1)
		l.full.Add(1)
	}
}

// Dropped is how many events are not in the log: dropped for a full queue,
// lost to a failed write, or given after Close.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Reopen opens the log's path anew (appending, creating it 0600), for
// after the file was renamed or removed (logrotate): the events recorded
// before the call go to the old file, those after it to the new one. A
// path that cannot be opened is an error, and the log goes on writing to
// the file it has.
func (l *Log) Reopen() error {
	f, err := openFile(l.path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		f.Close()
		return ErrClosed
	}
	l.pending = append(l.pending, reopened{f, l.seq})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// Close writes what is queued, within Options.CloseTimeout, and closes the
// file. Past the timeout it drops the rest (counted in Dropped) and
// closes the file, which cuts short a write the system holds up where it
// can (a pipe); the error then says so.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	close(l.queue)
	l.mu.Unlock()
	timer := time.NewTimer(l.closeTimeout)
	defer timer.Stop()
	select {
	case <-l.done:
		return l.w.closeErr
	case <-timer.C:
	}
	l.abandon.Store(true)
	l.fileMu.Lock()
	l.file.Close()
	l.fileMu.Unlock()
	return fmt.Errorf("audit log %s: what was queued was not written within %v; the rest is dropped", l.path, l.closeTimeout)
}

// snapshot copies an event, so that the producer may go on with its own;
// nil for a nil event. An event of a type it does not know goes as it is,
// for the writer to report.
func snapshot(e observe.Event) observe.Event {
	if v := reflect.ValueOf(e); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	switch e := e.(type) {
	case *observe.SessionStart:
		c := *e
		c.Roots = clone(c.Roots)
		return &c
	case *observe.SessionEnd:
		c := *e
		return &c
	case *observe.Call:
		c := *e
		c.Spills, c.Refused = clone(c.Spills), clone(c.Refused)
		if c.Permission != nil {
			p := *c.Permission
			c.Permission = &p
		}
		if c.Unsandboxed != nil {
			q := *c.Unsandboxed
			c.Unsandboxed = &q
		}
		return &c
	case *observe.Network:
		c := *e
		return &c
	case *observe.JailStart:
		c := *e
		return &c
	case *observe.TaskEnd:
		c := *e
		c.Refused = clone(c.Refused)
		return &c
	}
	return e
}

func clone[S ~[]E, E any](s S) S {
	if s == nil {
		return nil
	}
	return append(S(nil), s...)
}
