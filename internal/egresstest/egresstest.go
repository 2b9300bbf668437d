// Package egresstest holds what the front ends' tests of the network
// allowlist share: a client of the egress proxy.
package egresstest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/internal/testwait"
)

// Connect asks p, as owner, for a tunnel to dest (HTTP CONNECT), and
// returns the status line of its answer; p is closed with the test.
func Connect(t testing.TB, p *egress.Proxy, owner, dest string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l, owner) }()
	t.Cleanup(func() { p.Close(); <-served })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	status, err := testwait.Reply("the proxy's answer", func(context.Context) (string, error) {
		return bufio.NewReader(c).ReadString('\n')
	})
	if err != nil {
		t.Fatal(err)
	}
	return status
}
