package coalesce

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOrderAndCoalescing: a blocked consumer never blocks Add; what piled
// up goes out as one piece, in order, and Close flushes everything.
func TestOrderAndCoalescing(t *testing.T) {
	var mu sync.Mutex
	var got []string
	first := make(chan struct{})
	release := make(chan struct{})
	s := New(func(text string) {
		mu.Lock()
		got = append(got, text)
		n := len(got)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release // the consumer is stuck
		}
	}, 0)
	s.Add("a")
	<-first
	for i := range 100 {
		s.Add(string(rune('0' + i%10))) // never blocks
	}
	close(release)
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || got[0] != "a" || strings.Join(got, "") != "a"+strings.Repeat("0123456789", 10) {
		t.Errorf("sent %q", got)
	}
	if len(got) > 3 {
		t.Errorf("%d sends: the backlog was not coalesced", len(got))
	}
}

func TestPacingAndCloseFlush(t *testing.T) {
	var mu sync.Mutex
	var got []string
	s := New(func(text string) {
		mu.Lock()
		got = append(got, text)
		mu.Unlock()
	}, time.Hour) // only the first piece goes before Close
	s.Add("x")
	for range 10 {
		s.Add("y")
	}
	s.Close() // does not wait the hour
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "") != "x"+strings.Repeat("y", 10) {
		t.Errorf("sent %q", got)
	}
}

func TestCloseEmpty(t *testing.T) {
	calls := 0
	s := New(func(string) { calls++ }, 0)
	s.Close()
	s.Close()
	if calls != 0 {
		t.Errorf("%d sends", calls)
	}
}
