package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dshgo/dsh/egress"
	"github.com/dshgo/dsh/toolbash"
)

// netFlags are the network allowlist's (--sandbox-network=allowlist).
type netFlags struct {
	allow, deny listFlag
	defaults    bool // the default developer allowlist (egress.DefaultAllow) too

	proxy    *egress.Proxy    // once made; closed by closeExecutor
	asks     bool             // the front end asks the user about other hosts
	forwards []egress.Forward // the host's services the jails have, once jailForwards ran
}

// reachesLocal reports whether an allow rule names an address, or
// localhost with a port (which may be a loopback or private one: the
// server's own port, say, forwarded into the jails).
func (n *netFlags) reachesLocal() bool { return egress.NamesAddresses(n.allow) }

// rules are the allowlist's allow and deny rules.
func (n *netFlags) rules() (allow, deny []string) {
	if n.defaults {
		allow = egress.DefaultAllow()
	}
	return append(allow, n.allow...), slices.Clone(n.deny)
}

// makeProxy makes the allowlist's proxy, which tells a refused command
// why. It asks nobody until the front end, made after it, sets its asker
// (egress.Proxy.SetFront: mcp and acp through their Options.Egress, run
// with useTerminal); until then an unlisted host is refused unasked.
func (n *netFlags) makeProxy() (*egress.Proxy, error) {
	allow, deny := n.rules()
	p, err := egress.New(&egress.Options{Allow: allow, Deny: deny,
		RefusalText: func(r *egress.Refusal) string { return toolbash.EgressRefusal(r, howToAllowDomain) }})
	if err != nil {
		return nil, usageErr(fmt.Errorf("--allow-domain/--deny-domain: %w", err))
	}
	n.proxy = p
	return p, nil
}

// close closes the proxy, if one was made.
func (n *netFlags) close() {
	if n.proxy != nil {
		n.proxy.Close()
		n.proxy = nil
	}
}

// howToAllowDomain is how the user allows a host.
func howToAllowDomain(host string) string {
	return "restart dsh-bash with --allow-domain " + host + ` (or add it to "allowDomains" in the sandbox section of the config file)`
}

// useTerminal makes the terminal the front end of the allowlist's proxy,
// if there is one (dsh-bash run): it asks on the terminal where stdin is
// one (else an unlisted host is refused unasked), and says each refusal
// on stderr.
func (n *netFlags) useTerminal(stdin io.Reader, stderr io.Writer) {
	p := n.proxy
	if p == nil {
		return
	}
	var ask func(context.Context, egress.Question) (egress.Decision, error)
	if isTerminal(stdin) {
		ask, n.asks = terminalNetAsker(stdin, stderr), true
	}
	p.SetFront(ask, func(r *egress.Refusal) {
		if r.Reason != egress.Malformed {
			fmt.Fprintf(stderr, "dsh-bash run: %s\n", p.RefusalText(r))
		}
	})
}

// terminalNetAsker asks on the terminal (dsh-bash run) about a host, one
// question at a time; a question whose context ends (the command ended,
// dsh-bash is exiting) is given up, not left waiting for a line.
func terminalNetAsker(in io.Reader, out io.Writer) func(context.Context, egress.Question) (egress.Decision, error) {
	lines := make(chan string)
	var start sync.Once
	turn := make(chan struct{}, 1) // held by the question on the terminal
	return func(ctx context.Context, q egress.Question) (egress.Decision, error) {
		select {
		case turn <- struct{}{}:
			defer func() { <-turn }()
		case <-ctx.Done():
			return egress.Deny, ctx.Err()
		}
		// One reader for the process's life: a read cannot be abandoned,
		// so the next question takes the line an abandoned one would have.
		start.Do(func() { go readLines(in, lines) })
		fmt.Fprintf(out, "dsh-bash: the command wants to connect to %s, which is not on the network allowlist.\nAllow? [o]nce, [s]ession (this host, any port), [N]o, [d]eny every new host: ", toolbash.Visible(net.JoinHostPort(q.Host, strconv.Itoa(q.Port))))
		select {
		case line, ok := <-lines:
			if !ok {
				return egress.Deny, io.EOF
			}
			return netDecision(line), nil
		case <-ctx.Done():
			fmt.Fprintln(out)
			return egress.Deny, ctx.Err()
		}
	}
}

// readLines sends each line of in to lines, and closes it at in's end.
func readLines(in io.Reader, lines chan<- string) {
	defer close(lines)
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadString('\n')
		if line != "" || err == nil {
			lines <- line
		}
		if err != nil {
			return
		}
	}
}

// netDecision reads the user's answer to a network question.
func netDecision(line string) egress.Decision {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "o", "once":
		return egress.AllowOnce
	case "s", "session":
		return egress.AllowSession
	case "d":
		return egress.DenyAllNew
	}
	return egress.Deny
}
