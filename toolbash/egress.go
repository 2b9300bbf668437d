package toolbash

import (
	"fmt"
	"net"
	"strconv"

	"github.com/dshgo/dsh/egress"
)

// EgressRefusal is what a command reads when the sandbox's network proxy
// refuses its connection (the body of the proxy's 403 response): which
// destination, why, and what the user can do about it. howToAllow says
// how the user allows a host ("--allow-domain HOST"), for the refusals a
// rule of theirs would lift; "" leaves that out.
func EgressRefusal(r *egress.Refusal, howToAllow func(host string) string) string {
	dest := Visible(net.JoinHostPort(r.Host, strconv.Itoa(r.Port)))
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
		return fmt.Sprintf("dsh sandbox: %s is not on the network allowlist, and the user could not be asked; the connection is refused.%s Do not try to reach it another way.", dest, allow(Visible(host)))
	case egress.Declined:
		return fmt.Sprintf("dsh sandbox: the user declined connections to %s for this session. Do not retry; ask the user how to proceed.", dest)
	case egress.DeclinedAll:
		return fmt.Sprintf("dsh sandbox: the user declined every host not yet allowed, for this session; the connection to %s is refused. Do not retry; ask the user how to proceed.", dest)
	case egress.TooManyQuestions:
		return fmt.Sprintf("dsh sandbox: %s is not on the network allowlist, and the user was asked about too many hosts already; the connection is refused without asking.%s Do not retry at once; ask the user if you need it.", dest, allow(Visible(r.Host)))
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
		// The cause in our words: an upstream's own bytes (a malformed
		// header line) never reach the model.
		return fmt.Sprintf("dsh sandbox: %s could not be reached: %s.", dest, r.Cause)
	case egress.Busy:
		return fmt.Sprintf("dsh sandbox: too many connections through the sandbox's network proxy at once (%d); retry once some have closed.", r.Max)
	}
	return fmt.Sprintf("dsh sandbox: the network proxy refused the request: %s.", r.Cause)
}

// EgressRefused queues the network proxy's refusal for the session whose
// owner token it names, as text (what the refused command read:
// EgressRefusal), for TakeNotices; a front end calls it from the proxy's
// refusal hook. Left out: a request the proxy could not read (the client
// that sent it says so), and a refusal whose text the command was shown
// already (the body of the answer to a plain HTTP request, which curl
// prints): the model would read it twice.
func (t *Tools) EgressRefused(r *egress.Refusal, text string) {
	if r.Owner == "" || r.Reason == egress.Malformed || r.Shown {
		return
	}
	dest := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	if r.Reason == egress.Busy {
		dest = "" // one line, whichever destination
	}
	t.notices.addRefusal(r.Owner, dest, text)
}
