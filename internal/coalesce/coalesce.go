// Package coalesce delivers a stream of text pieces to a slow consumer
// without ever blocking the producer: pieces are sent in order from a
// goroutine of the Sender's own, and those that pile up while a send is in
// flight go out together as one.
package coalesce

import (
	"sync"
	"time"
)

// Sender sends pieces added with Add through its send function. Make it
// with New; Close it to flush.
type Sender struct {
	send  func(text string)
	every time.Duration

	mu      sync.Mutex
	pending []byte
	closed  bool
	wake    chan struct{} // a token: something to look at
	stop    chan struct{} // closed by Close: cut any pacing short
	done    chan struct{} // closed when the loop is over
}

// New starts a Sender. every, if positive, is the least time between two
// sends (pieces arriving meanwhile are joined); the final flush on Close
// does not wait for it.
func New(send func(text string), every time.Duration) *Sender {
	s := &Sender{send: send, every: every, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// Add queues text. It never blocks on the consumer.
func (s *Sender) Add(text string) {
	s.mu.Lock()
	s.pending = append(s.pending, text...)
	s.mu.Unlock()
	s.poke()
}

func (s *Sender) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close sends what is pending and returns once everything went out. Add
// must not be called after Close.
func (s *Sender) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	s.poke()
	<-s.done
}

func (s *Sender) loop() {
	defer close(s.done)
	var pace *time.Timer
	for range s.wake {
		s.mu.Lock()
		data, closed := string(s.pending), s.closed
		s.pending = s.pending[:0]
		s.mu.Unlock()
		if data != "" {
			s.send(data)
		}
		if closed {
			if pace != nil {
				pace.Stop()
			}
			return
		}
		if s.every > 0 && data != "" {
			if pace == nil {
				pace = time.NewTimer(s.every)
			} else {
				pace.Reset(s.every)
			}
			select { // a token that arrives meanwhile waits in wake
			case <-pace.C:
			case <-s.stop:
			}
		}
	}
}
