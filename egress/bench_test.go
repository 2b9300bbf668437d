package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a proxy (see runProxyHelper), for the
// benchmark to measure its memory apart from the client's and server's.
const helperEnv = "DSH_EGRESS_HELPER"

func init() {
	switch os.Getenv(helperEnv) {
	case "proxy":
		os.Exit(runProxyHelper(nil))
	case "proxy-few-files":
		// Few descriptors, and no bound of the proxy's own below them.
		lim := syscall.Rlimit{Cur: 64, Max: 64}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(runProxyHelper(&Options{MaxConns: 1000, MaxConnsPerOwner: 1000}))
	}
}

// runProxyHelper serves a proxy allowing 127.0.0.1 on a loopback port,
// prints the port, and exits when its stdin closes.
func runProxyHelper(o *Options) int {
	if o == nil {
		o = &Options{}
	}
	o.Allow = []string{"127.0.0.1"}
	p, err := New(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go p.Serve(l, "bench")
	fmt.Println(l.Addr().String())
	io.Copy(io.Discard, os.Stdin)
	p.Close()
	return 0
}

// source serves size bytes to each connection, from one fixed buffer.
func source(b *testing.B, size int64) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	buf := make([]byte, 256<<10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for left := size; left > 0; {
					n, err := c.Write(buf[:min(int64(len(buf)), left)])
					if err != nil {
						return
					}
					left -= int64(n)
				}
			}()
		}
	}()
	return l.Addr().String()
}

// drain reads c to its end and returns how many bytes came.
func drain(c net.Conn) int64 {
	n, _ := io.CopyBuffer(io.Discard, c, make([]byte, 256<<10))
	return n
}

// vmHWM is a process's peak resident set, in bytes.
func vmHWM(pid int) int64 {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkGigabyte moves 1 GB from a server on loopback to a client,
// directly and through a CONNECT tunnel of the proxy (a process of its
// own), alternately, and reports both throughputs, their ratio, and the
// proxy's peak RSS before and after the transfers.
func BenchmarkGigabyte(b *testing.B) {
	const size = 1 << 30
	src := source(b, size)
	proxy, cmd := proxyProcess(b, "proxy")
	idle := vmHWM(cmd.Process.Pid)
	var direct, proxied time.Duration
	for b.Loop() {
		t0 := time.Now()
		c, err := net.Dial("tcp", src)
		if err != nil {
			b.Fatal(err)
		}
		if n := drain(c); n != size {
			b.Fatalf("direct: %d bytes", n)
		}
		c.Close()
		t1 := time.Now()
		c = tunnelTo(b, proxy, src)
		if n := drain(c); n != size {
			b.Fatalf("through the proxy: %d bytes", n)
		}
		c.Close()
		direct += t1.Sub(t0)
		proxied += time.Since(t1)
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(direct), "direct-MB/s")
	b.ReportMetric(mbps(proxied), "proxied-MB/s")
	b.ReportMetric(mbps(proxied)/mbps(direct), "proxied/direct")
	b.ReportMetric(float64(idle)/(1<<20), "proxy-idle-RSS-MiB")
	b.ReportMetric(float64(vmHWM(cmd.Process.Pid))/(1<<20), "proxy-peak-RSS-MiB")
}

// tunnelTo opens a CONNECT tunnel to dest through proxy.
func tunnelTo(b *testing.B, proxy, dest string) net.Conn {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	for {
		line, err := readLine(c)
		if err != nil {
			b.Fatal(err)
		}
		if !strings.HasPrefix(line, "HTTP/1.1 200") && line != "" && !strings.Contains(line, ":") {
			b.Fatalf("CONNECT: %q", line)
		}
		if line == "" {
			return c
		}
	}
}

// proxyProcess starts the test binary as a proxy helper of the kind, and
// returns its address; it ends with the test.
func proxyProcess(tb testing.TB, kind string) (string, *exec.Cmd) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+kind)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); cmd.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the proxy helper: %v", err)
	}
	return strings.TrimSpace(addr), cmd
}
