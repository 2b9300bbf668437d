package egress

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
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

// needCurl skips (or, on CI, fails) the test here, on its own goroutine,
// if curl is missing: the tests then run it on others.
func needCurl(t *testing.T) { curl(t, "--version") }

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
	needCurl(t)
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
	needCurl(t)
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

// TestOneQuestionAtATime: a command that starts 40 connections at once
// to 40 names no rule lists gets one question put to the user at a time;
// as many as the line holds wait their turn, and the rest are refused at
// once, unasked, as TooManyQuestions (never a hang).
func TestOneQuestionAtATime(t *testing.T) {
	t.Parallel()
	needCurl(t)
	u := newUpstream(t)
	a := newOneByOne()
	got, told := refusals()
	queued := make(chan string, 100)
	const line = 3
	proxy, _ := startProxyTuned(t, Options{Allow: []string{"127.0.0.1"}, Ask: a.ask, Refused: told,
		AskQueue: line, AskBurst: 100, AskRefill: time.Hour,
		RefusalText: func(r *Refusal) string { return r.Error() }},
		func(p *Proxy) {
			p.event = func(e string) {
				if e == "queued" {
					queued <- e
				}
			}
		})
	port := u.port(false)
	const n = 40
	outs := make(chan string, n)
	for i := range n {
		go func() {
			out, _ := curl(t, "-x", "http://"+proxy, "http://n"+strconv.Itoa(i)+".test:"+port+"/hello")
			outs <- out
		}()
	}
	first := testwait.Recv(t, a.questions, "the first question")
	for range line {
		testwait.Recv(t, queued, "question waiting its turn")
	}
	for range n - 1 - line {
		if r := testwait.Recv(t, got, "refusal past the line"); r.Reason != TooManyQuestions {
			t.Errorf("%s refused as %v, want TooManyQuestions", r.Host, r.Reason)
		}
	}
	a.none(t, "while the first question waits")
	asked := map[string]bool{first.Host: true}
	a.answer(t, AllowOnce, nil)
	for range line {
		q := testwait.Recv(t, a.questions, "the next question in line")
		a.none(t, "while a question waits") // one at a time
		if asked[q.Host] {
			t.Errorf("%s asked about twice", q.Host)
		}
		asked[q.Host] = true
		a.answer(t, AllowOnce, nil)
	}
	var ok, refused int
	for range n {
		switch out := testwait.Recv(t, outs, "curl's output"); {
		case strings.HasPrefix(out, "hello from upstream"):
			ok++
		case strings.Contains(out, "refused unasked: the user was asked about too many hosts"):
			refused++
		default:
			t.Errorf("curl: %q", out)
		}
	}
	if ok != line+1 || refused != n-line-1 || a.most.Load() != 1 {
		t.Errorf("%d allowed, %d refused, at most %d questions at once; want %d, %d, 1", ok, refused, a.most.Load(), line+1, n-line-1)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// TestQuestionRate: a session's questions are rated: AskBurst of them,
// then one each AskRefill; one more is refused unasked, as
// TooManyQuestions.
func TestQuestionRate(t *testing.T) {
	t.Parallel()
	needCurl(t)
	u := newUpstream(t)
	a := newOneByOne()
	got, told := refusals()
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	proxy, _ := startProxyTuned(t, Options{Allow: []string{"127.0.0.1"}, Ask: a.ask, Refused: told,
		AskBurst: 2, AskRefill: time.Minute}, func(p *Proxy) { p.clock = clock.Now })
	port := u.port(false)
	allowedOnce := func(host string) {
		t.Helper()
		outc := make(chan string, 1)
		go func() { out, _ := curl(t, "-x", "http://"+proxy, "http://"+host+":"+port+"/hello"); outc <- out }()
		a.next(t, host, port)
		a.answer(t, AllowOnce, nil)
		if out := testwait.Recv(t, outc, "curl's output"); !strings.HasPrefix(out, "hello from upstream") {
			t.Errorf("%s, allowed once: %q", host, out)
		}
	}
	refusedUnasked := func(host string) {
		t.Helper()
		curl(t, "-x", "http://"+proxy, "http://"+host+":"+port+"/hello")
		if r := testwait.Recv(t, got, "the refusal of "+host); r.Reason != TooManyQuestions {
			t.Errorf("%s refused as %v, want TooManyQuestions", host, r.Reason)
		}
		a.none(t, host)
	}
	allowedOnce("r1.test")
	allowedOnce("r2.test")
	refusedUnasked("r3.test")
	clock.Add(time.Minute - time.Nanosecond)
	refusedUnasked("r3.test")
	clock.Add(time.Nanosecond)
	allowedOnce("r3.test")
	refusedUnasked("r4.test")
	clock.Add(10 * time.Minute) // refills the burst, no more
	allowedOnce("r4.test")
	allowedOnce("r5.test")
	refusedUnasked("r6.test")
}

// TestDenyAllNew: "deny every new host" refuses the host asked about,
// those waiting their turn, and every later one no rule lists, at once
// and unasked, for the rest of the session; hosts allowed for the
// session stay allowed; EndOwner forgets it.
func TestDenyAllNew(t *testing.T) {
	t.Parallel()
	needCurl(t)
	u := newUpstream(t)
	a := newOneByOne()
	got, told := refusals()
	queued := make(chan string, 10)
	proxy, p := startProxyTuned(t, Options{Allow: []string{"127.0.0.1"}, Ask: a.ask, Refused: told,
		RefusalText: func(r *Refusal) string { return r.Error() }},
		func(p *Proxy) {
			p.event = func(e string) {
				if e == "queued" {
					queued <- e
				}
			}
		})
	port := u.port(false)
	get := func(host string) chan string {
		outc := make(chan string, 1)
		go func() { out, _ := curl(t, "-x", "http://"+proxy, "http://"+host+":"+port+"/hello"); outc <- out }()
		return outc
	}
	ok := "hello from upstream"
	outc := get("kept.test")
	a.next(t, "kept.test", port)
	a.answer(t, AllowSession, nil)
	if out := testwait.Recv(t, outc, "curl's output"); !strings.HasPrefix(out, ok) {
		t.Fatalf("kept.test, allowed for the session: %q", out)
	}

	asked := get("first.test")
	a.next(t, "first.test", port)
	waiting := get("second.test")
	testwait.Recv(t, queued, "second.test waiting its turn")
	a.answer(t, DenyAllNew, nil)
	for _, c := range []chan string{asked, waiting} {
		r := testwait.Recv(t, got, "the refusal")
		out := testwait.Recv(t, c, "curl's output")
		if r.Reason != DeclinedAll || !strings.Contains(out, "the user declined every host not yet allowed") {
			t.Errorf("%s: refused as %v, %q; want DeclinedAll", r.Host, r.Reason, out)
		}
	}
	for _, host := range []string{"third.test", "first.test", "second.test"} {
		out := testwait.Recv(t, get(host), "curl's output")
		if r := testwait.Recv(t, got, "the refusal"); r.Reason != DeclinedAll {
			t.Errorf("%s after deny-all: refused as %v, %q; want DeclinedAll", host, r.Reason, out)
		}
	}
	if out := testwait.Recv(t, get("kept.test"), "curl's output"); !strings.HasPrefix(out, ok) {
		t.Errorf("kept.test after deny-all: %q; want it still allowed", out)
	}
	a.none(t, "after deny-all")

	p.EndOwner("s1")
	outc = get("third.test")
	a.next(t, "third.test", port)
	a.answer(t, AllowOnce, nil)
	if out := testwait.Recv(t, outc, "curl's output"); !strings.HasPrefix(out, ok) {
		t.Errorf("third.test after EndOwner, allowed once: %q", out)
	}
}

// TestQuestionAbandoned: a question waiting its turn that no connection
// waits for any more is dropped unasked, and its place in the rate given
// back.
func TestQuestionAbandoned(t *testing.T) {
	t.Parallel()
	a := newOneByOne()
	queued := make(chan string, 10)
	p, err := New(&Options{Allow: []string{"127.0.0.1"}, Resolve: loopbackDNS, Ask: a.ask, AskBurst: 2, AskRefill: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.event = func(e string) {
		if e == "queued" {
			queued <- e
		}
	}
	check := func(ctx context.Context, host string) chan Reason {
		why := make(chan Reason, 1)
		go func() {
			_, ref := p.check(ctx, "s", host, 80)
			if ref == nil {
				why <- 0
				return
			}
			why <- ref.Reason
		}()
		return why
	}
	first := check(t.Context(), "first.test")
	a.next(t, "first.test", "80")
	ctx, cancel := context.WithCancel(t.Context())
	gone := check(ctx, "gone.test")
	testwait.Recv(t, queued, "gone.test waiting its turn")
	cancel()
	if why := testwait.Recv(t, gone, "the end of the abandoned check"); why != Unlisted {
		t.Errorf("abandoned: %v, want Unlisted", why)
	}
	third := check(t.Context(), "third.test") // would be one too many without the token given back
	testwait.Recv(t, queued, "third.test waiting its turn")
	a.answer(t, AllowOnce, nil)
	if why := testwait.Recv(t, first, "first.test's check"); why != 0 {
		t.Errorf("first.test: %v", why)
	}
	a.next(t, "third.test", "80") // not gone.test
	a.answer(t, AllowOnce, nil)
	if why := testwait.Recv(t, third, "third.test's check"); why != 0 {
		t.Errorf("third.test: %v", why)
	}
}
