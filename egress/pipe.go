package egress

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// tunnel copies both ways between the client and the upstream until both
// directions have ended, or nothing has moved either way for the idle
// timeout; each direction's end is passed on as a half close. Each
// direction copies through one fixed buffer.
func (p *Proxy) tunnel(client, up net.Conn) {
	t := &pipe{p: p}
	t.touch()
	var wg sync.WaitGroup
	wg.Go(func() { t.copy(up, client) })
	t.copy(client, up)
	wg.Wait()
}

type pipe struct {
	p    *Proxy
	last atomic.Int64 // when a byte last moved, either way (UnixNano)
	half atomic.Bool  // one direction has ended
	once sync.Once    // closes both on a failure
}

// halfClosedIdle bounds the idle time of a tunnel one side of which has
// closed (or half-closed: the two cannot be told apart) when it is
// shorter than the idle timeout, so that a client gone for good does
// not hold its connection slot for the whole idle timeout. (Proxy's
// halfIdle, which tests set small.)
const halfClosedIdle = 30 * time.Second

// idle is how long the tunnel may stay idle now.
func (t *pipe) idle() time.Duration {
	if t.half.Load() {
		return min(t.p.idle, t.p.halfIdle)
	}
	return t.p.idle
}

// deadline is when the tunnel idles out, if nothing moves before.
func (t *pipe) deadline() time.Time { return time.Unix(0, t.last.Load()).Add(t.idle()) }

// readDeadline sets src's read deadline to the tunnel's, and again if a
// half close shortened it meanwhile (the half close sets the deadline of
// a read already waiting: see halfClose).
func (t *pipe) readDeadline(src net.Conn) {
	d := t.idle()
	_ = src.SetReadDeadline(t.deadline())
	if t.idle() != d {
		_ = src.SetReadDeadline(t.deadline())
	}
}

// halfClose passes src's end on to dst, and shortens the wait of the
// other direction's read (from dst), which began with the whole idle
// timeout. It reports false where dst cannot be half-closed.
func (t *pipe) halfClose(dst net.Conn) bool {
	t.half.Store(true)
	cw, ok := dst.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return false
	}
	_ = dst.SetReadDeadline(t.deadline())
	return true
}

func (t *pipe) touch() { t.last.Store(time.Now().UnixNano()) }

// copy moves src's bytes to dst until src ends (then it half-closes dst)
// or either fails or idles out (then it closes both, ending the other
// direction too).
func (t *pipe) copy(dst, src net.Conn) {
	bp := t.p.bufs.Get().(*[]byte)
	defer t.p.bufs.Put(bp)
	buf := *bp
	for {
		t.readDeadline(src)
		n, err := src.Read(buf)
		if n > 0 {
			t.touch()
			_ = dst.SetWriteDeadline(time.Now().Add(t.idle()))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				t.fail(dst, src)
				return
			}
			t.touch()
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded) && time.Since(time.Unix(0, t.last.Load())) < t.idle():
			// The other direction is busy: this one waits on.
		case errors.Is(err, io.EOF):
			if !t.halfClose(dst) {
				t.fail(dst, src)
			}
			return
		default:
			t.fail(dst, src)
			return
		}
	}
}

func (t *pipe) fail(a, b net.Conn) {
	t.once.Do(func() {
		a.Close()
		b.Close()
	})
}
