package egress

import (
	"time"

	"github.com/dshgo/dsh/observe"
)

// observe tells Options.Observe of the decision on a connection: verdict
// "allow" (ref holds the destination, the allow rule that let it
// through, if one did, and whether the user was asked) or "deny" (ref is
// the refusal). The session is named by observe.SessionName, never by its
// owner token.
func (p *Proxy) observe(ref *Refusal, verdict string) {
	if p.opts.Observe == nil {
		return
	}
	e := &observe.Network{Time: time.Now(), Session: observe.SessionName(ref.Owner), Host: ref.Host, Port: ref.Port,
		Verdict: verdict, Asked: ref.Asked}
	if verdict == "allow" {
		e.Rule = ref.allowRule
	} else {
		e.Rule, e.Reason = ref.Rule, ref.Error()
	}
	p.opts.Observe(e)
}
