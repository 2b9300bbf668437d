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
// not hold its connection slot for the whole idle timeout.
const halfClosedIdle = 30 * time.Second

// idle is how long the tunnel may stay idle now.
func (t *pipe) idle() time.Duration {
	if t.half.Load() {
		return min(t.p.idle, halfClosedIdle)
	}
	return t.p.idle
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
		_ = src.SetReadDeadline(time.Now().Add(t.idle()))
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
			t.half.Store(true)
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
			t.fail(dst, src)
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
