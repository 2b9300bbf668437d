package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
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

	proxy *egress.Proxy // once made; closed by closeExecutor
	asker netAsker
}

// reachesLocal reports whether an allow rule names an address (which may
// be a loopback or private one: the server's own port, say).
func (n *netFlags) reachesLocal() bool {
	for _, r := range n.allow {
		if _, err := netip.ParsePrefix(r); err == nil {
			return true
		}
		if _, err := netip.ParseAddr(strings.Trim(r, "[]")); err == nil {
			return true
		}
	}
	return false
}

// rules are the allowlist's allow and deny rules.
func (n *netFlags) rules() (allow, deny []string) {
	if n.defaults {
		allow = slices.Clone(egress.DefaultAllow)
	}
	return append(allow, n.allow...), slices.Clone(n.deny)
}

// makeProxy makes the allowlist's proxy, which asks the user through
// whatever front end sets the asker, and tells a refused command why.
func (n *netFlags) makeProxy() (*egress.Proxy, error) {
	allow, deny := n.rules()
	p, err := egress.New(&egress.Options{Allow: allow, Deny: deny, Ask: n.asker.ask,
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

// netAsker is the proxy's Ask, which the front end sets once it exists:
// until then (and without one), an unlisted host is refused.
type netAsker struct {
	mu  sync.Mutex
	fun func(context.Context, egress.Question) (egress.Decision, error)
}

func (a *netAsker) set(f func(context.Context, egress.Question) (egress.Decision, error)) {
	a.mu.Lock()
	a.fun = f
	a.mu.Unlock()
}

func (a *netAsker) ask(ctx context.Context, q egress.Question) (egress.Decision, error) {
	a.mu.Lock()
	f := a.fun
	a.mu.Unlock()
	if f == nil {
		return egress.Deny, toolbash.ErrCannotAsk
	}
	return f(ctx, q)
}

// asksNetwork reports whether the allowlist asks the user about other
// hosts (a front end set an asker).
func (a *netAsker) asksNetwork() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fun != nil
}

// terminalNetAsker asks on the terminal (dsh-bash run) about a host.
func terminalNetAsker(in io.Reader, out io.Writer) func(context.Context, egress.Question) (egress.Decision, error) {
	r := bufio.NewReader(in)
	var mu sync.Mutex // one question on the terminal at a time
	return func(ctx context.Context, q egress.Question) (egress.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "dsh-bash: the command wants to connect to %s, which is not on the network allowlist.\nAllow? [o]nce, [s]ession, [N]o: ", net.JoinHostPort(q.Host, strconv.Itoa(q.Port)))
		line, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return egress.Deny, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "o", "once":
			return egress.AllowOnce, nil
		case "s", "session":
			return egress.AllowSession, nil
		}
		return egress.Deny, nil
	}
}
