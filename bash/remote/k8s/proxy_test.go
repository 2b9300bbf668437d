//go:build linux

package k8s

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// cutProxy forwards TCP connections to the API server until cut, which
// closes them all and refuses new ones: an API server gone.
type cutProxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
	wg    sync.WaitGroup
}

// newCutProxy proxies host (a URL's host:port); its Host is what a client
// configuration takes instead.
func newCutProxy(t testing.TB, host string) *cutProxy {
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, to: u.Host}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.Cut)
	return p
}

// Host is the proxy's URL.
func (p *cutProxy) Host() string { return "https://" + p.ln.Addr().String() }

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(s, c); s.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, s); c.Close() }()
	}
}

// Cut closes every connection and the listener, and waits for the
// proxy's goroutines.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
