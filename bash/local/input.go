package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dshgo/dsh/bash"
)

// input is the executor's end of a task's input pipe. Writes go straight
// to the pipe (the kernel's buffer is the only one): a command that does
// not read makes a write fail once its wait has passed, never the server
// hold the bytes.
type input struct {
	mu     sync.Mutex // held by a write, and by the close
	w      *os.File   // nil once closed
	closed error      // why it is closed: ErrInputClosed or ErrTaskEnded
	term   bool       // w is a terminal's controlling side: EOF is Ctrl-D
	// id is the command's end (the pipe, the terminal) as the kernel
	// names it, to find the threads that read it; zero where unknown.
	id fileID
}

// openInput makes the task's input, a pipe or (spec.Terminal) a terminal
// that is its output too, and returns the command's end.
func (p *proc) openInput(spec bash.ExecSpec) (*os.File, error) {
	if spec.Terminal == nil {
		r, err := p.input.open()
		if err == nil {
			p.input.id, _ = fileIDOf(r)
		}
		return r, err
	}
	size := *spec.Terminal
	if !inTermRange(size.Rows) || !inTermRange(size.Cols) {
		size = bash.DefaultTermSize
	}
	master, in, tty, err := openTerminal(size.Rows, size.Cols)
	if err != nil {
		return nil, err
	}
	p.pipes[0].Close() // the terminal's output takes the stdout pipe's place
	p.pipes[0] = master
	p.out.term = true
	p.input.w, p.input.term = in, true
	p.input.id, _ = fileIDOf(tty)
	return tty, nil
}

// inTermRange reports whether n can be a side of a terminal's size: the
// kernel keeps each in 16 bits.
func inTermRange(n int) bool { return n >= 1 && n <= math.MaxUint16 }

// open makes the pipe and returns the command's end.
func (in *input) open() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make the input pipe: %w", err)
	}
	in.w = w
	return r, nil
}

// close closes the executor's end as the task ends.
func (in *input) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.w != nil {
		in.w.Close()
		in.w = nil
	}
	if in.closed == nil {
		in.closed = bash.ErrTaskEnded
	}
}

// write writes data, and closes the input after it when eof, giving up on
// the write at deadline.
func (in *input) write(data []byte, eof bool, deadline time.Time) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.w == nil {
		return 0, in.closed
	}
	if err := in.w.SetWriteDeadline(deadline); err != nil {
		// A write without its deadline could block for ever, holding mu.
		return 0, fmt.Errorf("the task's input has no deadline: %w", err)
	}
	if eof && in.term {
		data, eof = append(data[:len(data):len(data)], 0x04), false // Ctrl-D; the terminal stays open
	}
	var n int
	var err error
	if len(data) > 0 {
		// Not for an EOF alone: a write, even of nothing, fails at once
		// once the deadline has passed (a wait that ran out while this
		// waited its turn), and a close needs no reader.
		n, err = in.w.Write(data)
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, bash.ErrInputBlocked
	case err != nil:
		// The command closed its end (EPIPE), or its terminal is gone (EIO).
		return n, fmt.Errorf("%w: %w", bash.ErrInputClosed, err)
	case eof:
		in.w.Close()
		in.w, in.closed = nil, bash.ErrInputClosed
	}
	return n, nil
}

// WriteInput writes to the task's input and returns what it printed in
// response: once it waits for input again and its output is quiet, or
// (where the kernel's state cannot be read, or the program sleeps without
// reading its input) once its output settled. See bash.Executor.
func (e *Executor) WriteInput(ctx context.Context, id bash.TaskID, in bash.Input) (bash.TaskRead, error) {
	t, err := e.started(ctx, id)
	if err != nil {
		return bash.TaskRead{}, err
	}
	if !t.spec.Input {
		return bash.TaskRead{}, &bash.InputError{ID: id, Err: bash.ErrNoInput}
	}
	if t.p == nil {
		return bash.TaskRead{}, &bash.InputError{ID: id, Err: bash.ErrTaskEnded}
	}
	defer t.p.news.begin(len(in.Data) > 0 || in.EOF)()
	w := t.p.answerWait(ctx, in)
	changed := t.p.outputChanged()
	t.p.expectEcho(in.Data)
	n, err := t.p.input.write(in.Data, in.EOF, w.deadline)
	if err != nil {
		t.p.out.expectEcho(nil) // what was not typed is not echoed
		return bash.TaskRead{}, &bash.InputError{ID: id, Written: n, Err: err}
	}
	waiting := t.p.awaitAnswer(ctx, changed, w)
	select {
	case <-t.p.done:
		// It ended: the read reports how, once that is recorded.
		select {
		case <-t.ended:
		case <-ctx.Done():
		}
	default:
	}
	return e.read(t, waiting), nil
}

// answerWait is what a WriteInput waits for once it has written.
type answerWait struct {
	settle, quiet time.Duration
	deadline      time.Time
	// answerAt: output past this many bytes (both streams) is the answer,
	// past what a terminal echoes of the input.
	answerAt int64
	// before holds the threads that read the input before the write: one
	// of them counts as waiting again only once it has run since. With
	// anyReader, any reader counts: nothing written wakes one (a read
	// only, or part of a line a terminal holds until it is ended).
	before    []reader
	anyReader bool
	probe     bool // the task's state can be read
	// eof: the write ends the input. Its quiet is then no answer: the
	// call waits for the task's end (a REPL exiting, however long that
	// takes on a loaded machine), for it to read a terminal again, or for
	// the deadline (see closesPipe).
	eof bool
}

// answerWait reads the task before a write of in.
func (p *proc) answerWait(ctx context.Context, in bash.Input) answerWait {
	w := answerWait{
		settle:   orDefault(in.Settle, bash.DefaultInputSettle),
		quiet:    orDefault(in.Quiet, bash.DefaultInputQuiet),
		deadline: time.Now().Add(orDefault(in.Wait, bash.DefaultInputWait)),
		answerAt: p.outputLen() + p.input.echoLen(in.Data),
		eof:      in.EOF,
	}
	if d, ok := ctx.Deadline(); ok && d.Before(w.deadline) {
		w.deadline = d
	}
	readOnly := len(in.Data) == 0 && !in.EOF
	if readOnly {
		// A call that writes nothing only reads: what it has not read
		// yet is its answer.
		w.answerAt = p.readLen()
	}
	w.anyReader = readOnly || !in.EOF && p.input.holdsLine(in.Data)
	if r := p.probe(timerHorizon(w.deadline)); r.state != inputUnknown {
		w.probe, w.before = true, r.readers
	}
	return w
}

func orDefault(v, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return v
}

// outputChanged returns channels that close on the next output of either
// stream.
func (p *proc) outputChanged() [2]<-chan struct{} {
	return [2]<-chan struct{}{p.out.changed(), p.errs.changed()}
}

// outputLen is how many bytes the command has printed, both streams.
func (p *proc) outputLen() int64 { return p.out.length() + p.errs.length() }

// readLen is how many bytes of both streams have been read.
func (p *proc) readLen() int64 { return p.out.readPos() + p.errs.readPos() }

// awaitQuiet waits until the command, having printed more than answerAt
// bytes in all, has printed nothing more for settle; or until deadline
// passes, the command ends, or ctx is done.
func (p *proc) awaitQuiet(ctx context.Context, changed [2]<-chan struct{}, settle time.Duration, deadline time.Time, answerAt int64) {
	end := time.NewTimer(time.Until(deadline))
	defer end.Stop()
	var quiet *time.Timer // armed by the first output
	var quietC <-chan time.Time
	defer func() {
		if quiet != nil {
			quiet.Stop()
		}
	}()
	if p.outputLen() > answerAt { // output came before the call, unread
		quiet = time.NewTimer(settle)
		quietC = quiet.C
	}
	for {
		select {
		case <-changed[0]:
		case <-changed[1]:
		case <-quietC:
			return
		case <-end.C:
			return
		case <-p.done:
			return
		case <-ctx.Done():
			return
		}
		changed = p.outputChanged()
		if p.outputLen() <= answerAt {
			continue // the terminal's echo of the input, not yet the answer
		}
		if quiet == nil {
			quiet = time.NewTimer(settle)
			quietC = quiet.C
		} else {
			quiet.Reset(settle)
		}
	}
}

// echoLen is how many bytes a terminal echoes of data: none from a pipe,
// or from a terminal whose echo is off (a password prompt, a full-screen
// program); else each byte, a newline as two (\r\n), a control
// character as two (^C).
func (in *input) echoLen(data []byte) int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.term || in.w == nil {
		return 0
	}
	if echo, _ := termMode(in.w); !echo {
		return 0
	}
	n := int64(0)
	for _, c := range data {
		switch {
		case c == '\n' || c == '\r':
			n += 2
		case c == 0x04: // end of file: not echoed
		case c == 0x7f: // erase: backspace, space, backspace
			n += 3
		case c < ' ' && c != '\t':
			n += 2 // ^C
		default:
			n++
		}
	}
	return n
}

// holdsLine reports whether a terminal that reads whole lines keeps data
// from its reader: none of it ends a line (nor is a character that
// signals, or ends the input), so no read returns for it yet.
func (in *input) holdsLine(data []byte) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.term || in.w == nil {
		return false
	}
	if _, canon := termMode(in.w); !canon {
		return false
	}
	return !bytes.ContainsAny(data, "\n\r\x04\x03\x1a\x1c")
}

// expectEcho tells a terminal's output that it will show data, about to
// be typed, where it is now: when the kernel echoes (ECHO), or when data
// is a whole line and the program reads keys one by one (not ICANON),
// drawing what is typed (see echo).
func (p *proc) expectEcho(data []byte) {
	if !p.input.term {
		return
	}
	text, ok := echoText(data)
	if !ok {
		return
	}
	p.input.mu.Lock()
	w := p.input.w
	p.input.mu.Unlock()
	if w == nil {
		return
	}
	echoes, canon := termMode(w)
	switch {
	case echoes:
		p.out.expectEcho(&echo{at: p.out.length(), text: text, sure: true})
	case !canon && strings.HasSuffix(text, "\n"):
		p.out.expectEcho(&echo{at: p.out.length(), text: text})
	}
}
