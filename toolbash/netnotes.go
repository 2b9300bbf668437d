package toolbash

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dshgo/dsh/egress"
)

// The network proxy's refusals reach the model beside a session's next
// result (a client shows a refused CONNECT only as "response 403"), in
// our own words (EgressRefusal: never bytes an upstream chose), one line
// per destination, at most maxNetworkNotes of them and a count of the
// rest, within what the result's budget leaves.

// maxNetworkNotes bounds the destinations whose refusal waits for one
// session with a line of its own; past it, refusals are counted.
const maxNetworkNotes = 8

// netNote is the refusal of one destination.
type netNote struct{ dest, text string }

// netQueue is what waits for one session.
type netQueue struct {
	notes []netNote
	more  map[string]bool // destinations past maxNetworkNotes
}

// netNotes holds, per session, the proxy's refusals its model has not
// read yet.
type netNotes struct {
	mu      sync.Mutex
	pending map[string]*netQueue
}

func (b *netNotes) add(owner, dest, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = map[string]*netQueue{}
	}
	q := b.pending[owner]
	if q == nil {
		q = &netQueue{more: map[string]bool{}}
		b.pending[owner] = q
	}
	for _, n := range q.notes {
		if n.dest == dest {
			return // one line per destination
		}
	}
	if len(q.notes) < maxNetworkNotes {
		q.notes = append(q.notes, netNote{dest, text})
		return
	}
	q.more[dest] = true
}

// take returns the session's waiting refusals as one text of at most room
// characters (negative: any), and forgets them; lines that do not fit
// are counted with the rest. Where not even one line fits, everything
// waits for the next result.
func (b *netNotes) take(owner string, room int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.pending[owner]
	if q == nil {
		return ""
	}
	var lines []string
	more := len(q.more)
	for i, n := range q.notes {
		if room >= 0 && chars(networkText(append(lines, n.text), more+len(q.notes)-i-1)) > room {
			more += len(q.notes) - i
			break
		}
		lines = append(lines, n.text)
	}
	if len(lines) == 0 {
		return ""
	}
	delete(b.pending, owner)
	return networkText(lines, more)
}

func (b *netNotes) drop(owner string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, owner)
}

// networkText is how the proxy's refusals read: a heading, one line per
// destination, and how many more there were.
func networkText(lines []string, more int) string {
	s := "[sandbox network: connections refused by the proxy]\n" + strings.Join(lines, "\n")
	switch {
	case more == 1:
		s += "\n…and connections to 1 more destination were refused."
	case more > 1:
		s += fmt.Sprintf("\n…and connections to %d more destinations were refused.", more)
	}
	return s
}

func chars(s string) int { return utf8.RuneCountInString(s) }

// EgressRefused queues the network proxy's refusal for the session whose
// owner token it names, for NoticeTexts (the egress proxy's Refused hook;
// howToAllow as for EgressRefusal). Left out: a request the proxy could
// not read (the client that sent it says so), and a refusal whose text
// the command was shown already (the body of the answer to a plain HTTP
// request, which curl prints): the model would read it twice.
func (t *Tools) EgressRefused(r *egress.Refusal, howToAllow func(host string) string) {
	if r.Owner == "" || r.Reason == egress.Malformed || r.Shown {
		return
	}
	dest := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	if r.Reason == egress.Busy {
		dest = "" // one line, whichever destination
	}
	t.netNotes.add(r.Owner, dest, EgressRefusal(r, howToAllow))
}

// NoticeTexts returns, and forgets, what waits for the session besides
// its results, as texts to go beside the result of used characters: its
// completion notices (NoticesText) and its network refusals, together
// within what the result leaves of the budget of one result
// (Options.MaxResultChars), each set apart by a blank line (two
// characters). What does not fit waits for the next result: completion
// notices whole, network refusals as a count. Front ends add each text
// as a block of its own after "\n\n" (MCP), or as a message of this
// agent's (ACP, with used 0).
func (t *Tools) NoticeTexts(sessionID string, used int) []string {
	room := -1 // no bound
	if t.maxChars > 0 {
		room = max(t.maxChars-used-2, 0)
	}
	var out []string
	if n := t.notices.takeWithin(sessionID, room); len(n) > 0 {
		text := NoticesText(n)
		out = append(out, text)
		if room >= 0 {
			room = max(room-chars(text)-2, 0)
		}
	}
	if text := t.netNotes.take(sessionID, room); text != "" {
		out = append(out, text)
	}
	return out
}
