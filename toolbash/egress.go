package toolbash

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dshgo/dsh/egress"
)

// EgressRefusal is what a command reads when the sandbox's network proxy
// refuses its connection (the body of the proxy's 403 response): which
// destination, why, and what the user can do about it. howToAllow says
// how the user allows a host ("--allow-domain HOST"), for the refusals a
// rule of theirs would lift; "" leaves that out.
func EgressRefusal(r *egress.Refusal, howToAllow func(host string) string) string {
	dest := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	allow := func(host string) string {
		if howToAllow == nil {
			return ""
		}
		return " The user can allow it: " + howToAllow(host) + "."
	}
	switch r.Reason {
	case egress.Denied:
		return fmt.Sprintf("dsh sandbox: the connection to %s is refused by the network rule deny %q. Do not try to reach it another way; ask the user if you need it.", dest, r.Rule)
	case egress.Unlisted:
		host := r.Host
		if host == "localhost" {
			host = dest // a service on the host's loopback is allowed at its port
		}
		return fmt.Sprintf("dsh sandbox: %s is not on the network allowlist, and the user could not be asked; the connection is refused.%s Do not try to reach it another way.", dest, allow(host))
	case egress.Declined:
		return fmt.Sprintf("dsh sandbox: the user declined connections to %s for this session. Do not retry; ask the user how to proceed.", dest)
	case egress.LocalAddress:
		is := "is"
		if r.Host != r.Addr.String() {
			is = "resolves to"
		}
		if r.Addr.IsLoopback() {
			at := net.JoinHostPort(r.Addr.String(), strconv.Itoa(r.Port))
			return fmt.Sprintf("dsh sandbox: the connection to %s is refused: it %s %s, a loopback address of the host's, which the sandbox reaches only at a port the user allows (then forwarded to the same address in the sandbox).%s", dest, is, r.Addr, allow(at))
		}
		return fmt.Sprintf("dsh sandbox: the connection to %s is refused: it %s %s, a loopback, private or link-local address, which the sandbox reaches only where the user allows that address.%s", dest, is, r.Addr, allow(r.Addr.String()))
	case egress.Unreachable:
		return fmt.Sprintf("dsh sandbox: %s could not be reached: %v", dest, r.Err)
	case egress.Busy:
		return fmt.Sprintf("dsh sandbox: too many connections through the sandbox's network proxy at once (%d); retry once some have closed.", r.Max)
	}
	return fmt.Sprintf("dsh sandbox: the network proxy could not read the request: %v", r.Err)
}

// maxNetworkNotices bounds the refusals waiting for one session (each
// distinct; past it the oldest are dropped).
const maxNetworkNotices = 16

// netNotes holds, per session, the proxy's refusals its model has not
// read yet: a client shows a refused CONNECT only as "response 403", so
// the reason reaches the model beside the next result.
type netNotes struct {
	mu      sync.Mutex
	pending map[string][]string
}

func (b *netNotes) add(owner, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = map[string][]string{}
	}
	q := b.pending[owner]
	if slices.Contains(q, text) {
		return
	}
	q = append(q, text)
	if len(q) > maxNetworkNotices {
		q = q[len(q)-maxNetworkNotices:]
	}
	b.pending[owner] = q
}

func (b *netNotes) take(owner string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.pending[owner]
	delete(b.pending, owner)
	return q
}

// EgressRefused queues the text of the network proxy's refusal for the
// session whose owner token it names, for TakeNetworkNotices (the egress
// proxy's Refused hook; howToAllow as for EgressRefusal). A request the
// proxy could not read is left out: the client that sent it says so.
func (t *Tools) EgressRefused(r *egress.Refusal, howToAllow func(host string) string) {
	if r.Owner == "" || r.Reason == egress.Malformed {
		return
	}
	t.netNotes.add(r.Owner, EgressRefusal(r, howToAllow))
}

// TakeNetworkNotices returns the proxy's refusals waiting for the
// session, oldest first, and forgets them. Front ends add them to the
// session's next tool result (NetworkNoticeBlock) or model request
// (NetworkNoticesText), after the completion notices.
func (t *Tools) TakeNetworkNotices(sessionID string) []string { return t.netNotes.take(sessionID) }

// NetworkNoticesText is how the proxy's refusals reach the model: a
// heading, then one refusal per line.
func NetworkNoticesText(notices []string) string {
	return "[sandbox network: connections refused by the proxy]\n" + strings.Join(notices, "\n")
}

// NetworkNoticeBlock is NetworkNoticesText set apart for a content block
// of its own, as NoticeBlock is.
func NetworkNoticeBlock(notices []string) string { return "\n\n" + NetworkNoticesText(notices) }
