package egress

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshgo/dsh/internal/testwait"
)

// oneByOne is an Options.Ask whose questions the test answers, one by
// one, as they come.
type oneByOne struct {
	questions chan Question // each question, as it is put
	answers   chan reply    // the answer to the question put now
	inFlight  atomic.Int32  // questions put and not answered
	most      atomic.Int32  // the most ever in flight at once
}

type reply struct {
	d   Decision
	err error
}

func newOneByOne() *oneByOne {
	return &oneByOne{questions: make(chan Question, 100), answers: make(chan reply)}
}

func (a *oneByOne) ask(ctx context.Context, q Question) (Decision, error) {
	n := a.inFlight.Add(1)
	defer a.inFlight.Add(-1)
	for m := a.most.Load(); n > m && !a.most.CompareAndSwap(m, n); m = a.most.Load() {
	}
	a.questions <- q
	select {
	case r := <-a.answers:
		return r.d, r.err
	case <-ctx.Done():
		return Deny, ctx.Err()
	}
}

// next waits for the next question, and fails the test unless it names
// host and port.
func (a *oneByOne) next(t *testing.T, host, port string) {
	t.Helper()
	q := testwait.Recv(t, a.questions, "the question about "+host)
	if q.Host != host || q.Port != atoi(t, port) {
		t.Fatalf("asked about %s:%d, want %s:%s", q.Host, q.Port, host, port)
	}
}

// answer answers the question put now.
func (a *oneByOne) answer(t *testing.T, d Decision, err error) {
	t.Helper()
	select {
	case a.answers <- reply{d, err}:
	case <-time.After(testwait.Limit):
		t.Fatalf("no question waited for an answer within %v", testwait.Limit)
	}
}

// none fails the test if a question is waiting.
func (a *oneByOne) none(t *testing.T, after string) {
	t.Helper()
	select {
	case q := <-a.questions:
		t.Fatalf("%s: asked about %s:%d, want no question", after, q.Host, q.Port)
	default:
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	p, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDenyIsPerPort: a Deny is remembered for the host and port the
// question named: another port of the host is asked about anew, and the
// denied one is refused unasked.
func TestDenyIsPerPort(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	a := newOneByOne()
	got, told := refusals()
	proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}, Ask: a.ask, Refused: told})
	tls, plain := u.port(true), u.port(false)
	connect := func() (string, int) {
		return curl(t, "-k", "-x", "http://"+proxy, "https://no.test:"+tls+"/hello")
	}
	done := make(chan int, 1)
	go func() { _, code := connect(); done <- code }()
	a.next(t, "no.test", tls)
	a.answer(t, Deny, nil)
	if code := testwait.Recv(t, done, "curl's exit"); code != 56 {
		t.Errorf("a declined CONNECT: curl exit %d, want 56", code)
	}
	if r := testwait.Recv(t, got, "the refusal"); r.Reason != Declined {
		t.Errorf("refused as %v, want Declined", r.Reason)
	}
	if _, code := connect(); code != 56 {
		t.Errorf("the declined port again: curl exit %d, want 56", code)
	}
	if r := testwait.Recv(t, got, "the refusal"); r.Reason != Declined {
		t.Errorf("the declined port again: refused as %v, want Declined", r.Reason)
	}
	a.none(t, "the declined port again")
	outc := make(chan string, 1)
	go func() { out, _ := curl(t, "-x", "http://"+proxy, "http://no.test:"+plain+"/hello"); outc <- out }()
	a.next(t, "no.test", plain)
	a.answer(t, AllowOnce, nil)
	if out := testwait.Recv(t, outc, "curl's output"); !strings.HasPrefix(out, "hello from upstream") {
		t.Errorf("another port of the declined host, allowed once: %q", out)
	}
}

// TestAskErrorNotRemembered: a question nobody answered (an error: a
// client's cancel, a timeout, a session gone) refuses the connection as
// Unlisted and is not remembered: the next connection asks again.
func TestAskErrorNotRemembered(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	a := newOneByOne()
	got, told := refusals()
	proxy, _ := startProxy(t, Options{Allow: []string{"127.0.0.1"}, Ask: a.ask, Refused: told, AskTimeout: 100 * time.Millisecond})
	port := u.port(false)
	get := func() chan string {
		outc := make(chan string, 1)
		go func() { out, _ := curl(t, "-x", "http://"+proxy, "http://maybe.test:"+port+"/hello"); outc <- out }()
		return outc
	}
	for _, err := range []error{context.Canceled, errors.New("the session is gone"), nil} {
		outc := get()
		a.next(t, "maybe.test", port)
		if err != nil {
			a.answer(t, Deny, err) // with Deny, which an error makes no answer
		} // else left to time out
		out := testwait.Recv(t, outc, "curl's output")
		if r := testwait.Recv(t, got, "the refusal"); r.Reason != Unlisted || !strings.Contains(out, "is not in the allowlist") {
			t.Errorf("an Ask that returned %v: refused as %v, %q; want Unlisted", err, r.Reason, out)
		}
	}
	outc := get()
	a.next(t, "maybe.test", port)
	a.answer(t, AllowOnce, nil)
	if out := testwait.Recv(t, outc, "curl's output"); !strings.HasPrefix(out, "hello from upstream") {
		t.Errorf("asked again after the errors, allowed once: %q", out)
	}
}
