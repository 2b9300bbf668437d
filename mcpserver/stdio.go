package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioOptions configures ServeStdio. A nil *StdioOptions means defaults.
type StdioOptions struct {
	// MaxLineBytes bounds one line of input (one JSON-RPC message); a longer
	// line is answered with an error and skipped. Default 16 MiB.
	MaxLineBytes int
	// DrainTimeout bounds how long, once the client has closed its end,
	// the server goes on answering the requests it had already read: their
	// commands are aborted at once, and end within the executor's grace
	// period. Default 4 s: the local executor's default grace (3 s) and a
	// second.
	DrainTimeout time.Duration
}

func (o *StdioOptions) defaults() StdioOptions {
	var d StdioOptions
	if o != nil {
		d = *o
	}
	if d.MaxLineBytes <= 0 {
		d.MaxLineBytes = 16 << 20
	}
	if d.DrainTimeout <= 0 {
		d.DrainTimeout = 4 * time.Second
	}
	return d
}

// stdioConn is an mcp.Connection over newline-delimited JSON, hardened for
// clients that misbehave:
//   - a line that is not a JSON-RPC message is answered with a JSON-RPC
//     error (parse error, or invalid request), and the next line is read;
//   - a request the client cancelled (notifications/cancelled) gets no
//     response, as the protocol says;
//   - when the input ends, the requests already read are still answered
//     before the connection reports EOF;
//   - the client is gone (gone is closed) when its input ends or a write to
//     it fails, so that the server can abort its work at once.
type stdioConn struct {
	out    io.Writer
	in     io.Reader
	opts   StdioOptions
	msgs   chan jsonrpc.Message // from the reader; closed at the input's end
	gone   chan struct{}        // closed when the client is gone
	broken chan struct{}        // closed when a write failed: nothing more can reach the client
	close  chan struct{}        // closed by Close
	halt   chan struct{}        // closed by stopWrites: every write fails at once

	writeMu sync.Mutex

	mu         sync.Mutex
	open       map[string]bool // requests read and not answered yet
	cancelled  map[string]bool // open requests the client cancelled
	answer     chan struct{}   // closed (and replaced) when open shrinks
	goneOnce   sync.Once
	brokenOnce sync.Once
	closeOnce  sync.Once
	haltOnce   sync.Once
}

func newStdioConn(in io.Reader, out io.Writer, opts *StdioOptions) *stdioConn {
	c := &stdioConn{
		in: in, out: out, opts: opts.defaults(),
		msgs:      make(chan jsonrpc.Message),
		gone:      make(chan struct{}),
		broken:    make(chan struct{}),
		close:     make(chan struct{}),
		halt:      make(chan struct{}),
		open:      map[string]bool{},
		cancelled: map[string]bool{},
		answer:    make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// readLoop reads lines until the input ends, answering the malformed ones
// itself and passing the rest on.
func (c *stdioConn) readLoop() {
	defer close(c.msgs)
	r := bufio.NewReaderSize(c.in, 64<<10)
	for {
		line, err := readLine(r, c.opts.MaxLineBytes)
		if errors.Is(err, errLineTooLong) {
			c.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the message is over %d bytes", c.opts.MaxLineBytes))
			continue
		}
		if len(line) > 0 {
			if msg := c.decode(line); msg != nil {
				select {
				case c.msgs <- msg:
				case <-c.close:
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its end; a line over max bytes is read
// to its end and dropped.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 { // room for "\r\n"
			line = line[:0]
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil {
				return nil, err
			}
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return trimLine(line), err
		}
	}
}

func trimLine(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// decode turns a line into a message, or answers it with an error and
// returns nil. It notes the requests read and the cancellations of them.
func (c *stdioConn) decode(line []byte) jsonrpc.Message {
	if !json.Valid(line) {
		c.reject(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")
		return nil
	}
	if line[0] == '[' {
		c.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported")
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.reject(rawID(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.noteRequest(req)
	}
	return msg
}

// rawID is the "id" of a JSON object, if it has a usable one.
func rawID(line []byte) json.RawMessage {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil || len(v.ID) == 0 {
		return nil
	}
	switch v.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return v.ID
	}
	return nil
}

// noteRequest records a call as open, and a cancellation of an open call.
func (c *stdioConn) noteRequest(req *jsonrpc.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		c.open[idKey(req.ID)] = true
		return
	}
	if req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil && c.open[idKey(id)] {
		c.cancelled[idKey(id)] = true
	}
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// reject answers a line that is not a message with a JSON-RPC error.
func (c *stdioConn) reject(id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{code, message}})
	_ = c.writeLine(data)
}

// Read returns the next message. Once the input has ended, it waits until
// every request read has been answered (or DrainTimeout passed), then
// reports io.EOF.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg, ok := <-c.msgs:
		if ok {
			return msg, nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.close:
		return nil, io.EOF
	}
	c.goneNow()
	c.drain(ctx)
	c.stopWrites() // a client that stopped reading must not hold the end up
	return nil, io.EOF
}

// drain waits until no request read is left unanswered.
func (c *stdioConn) drain(ctx context.Context) {
	deadline := time.NewTimer(c.opts.DrainTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n, answer := len(c.open), c.answer
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-answer:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		case <-c.close:
			return
		}
	}
}

// Write sends a message; a response to a request the client cancelled is
// dropped. A failed write means the client is gone. A request counts as
// answered only once its response has been written (or dropped), so that
// the drain at EOF never stops writes under an answer on its way out.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	if isResp {
		defer c.answered(resp.ID)
		if c.wasCancelled(resp.ID) {
			return nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode a message: %w", err)
	}
	return c.writeLine(data)
}

// wasCancelled reports whether the client cancelled the request.
func (c *stdioConn) wasCancelled(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cancelled[idKey(id)]
}

// answered marks a request as answered.
func (c *stdioConn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := idKey(id)
	delete(c.cancelled, k)
	if c.open[k] {
		delete(c.open, k)
		close(c.answer)
		c.answer = make(chan struct{})
	}
}

// errStopped is the error of a write after stopWrites.
var errStopped = errors.New("the connection is shutting down")

func (c *stdioConn) writeLine(data []byte) error {
	if isDone(c.halt) {
		return errStopped
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if isDone(c.halt) {
		return errStopped
	}
	if _, err := c.out.Write(append(data, '\n')); err != nil {
		c.goneNow()
		c.brokenOnce.Do(func() { close(c.broken) })
		return fmt.Errorf("write to the client: %w", err)
	}
	return nil
}

func (c *stdioConn) goneNow() { c.goneOnce.Do(func() { close(c.gone) }) }

// stopWrites makes every write fail from now on, and ends a write that is
// blocked on a client that stopped reading, if out has write deadlines (an
// *os.File on a pipe or socket in non-blocking mode does): closing the
// session waits for its handlers, and a handler must not wait on a client
// forever.
func (c *stdioConn) stopWrites() {
	c.haltOnce.Do(func() {
		close(c.halt)
		if d, ok := c.out.(interface{ SetWriteDeadline(time.Time) error }); ok {
			_ = d.SetWriteDeadline(time.Unix(1, 0))
		}
	})
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Close stops reading; the input is closed when it can be.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.close)
		if cl, ok := c.in.(io.Closer); ok {
			_ = cl.Close()
		}
	})
	return nil
}

// SessionID is empty: a stdio connection is one session.
func (c *stdioConn) SessionID() string { return "" }

// connTransport hands the SDK a connection made beforehand.
type connTransport struct{ conn *stdioConn }

func (t connTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }
