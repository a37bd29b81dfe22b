// Package inflight counts the requests a service is serving, so that it can
// drain on stop: stop taking new ones, then wait — for a bounded time — until
// none is left.
//
// Deciding whether to take a request is the service's own rule (a stopped
// flag under its own lock); the Counter only counts and wakes the waiter.
package inflight

import (
	"context"
	"sync"
	"time"
)

// Counter counts requests in flight. The zero value is ready to use; a
// Counter must not be copied after first use.
type Counter struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // made by a waiter, closed when n falls to zero
}

// Add counts one more request in flight.
func (c *Counter) Add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

// Done counts one request finished.
func (c *Counter) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n <= 0 {
		panic("inflight: Done without Add")
	}
	c.n--
	if c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// Len reports how many requests are in flight.
func (c *Counter) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Wait waits until no request is in flight or timeout passes (a negative
// timeout waits without limit), and reports whether none is.
func (c *Counter) Wait(timeout time.Duration) bool {
	if timeout < 0 {
		return c.waitOr(nil, nil)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	return c.waitOr(nil, t.C)
}

// Drain waits until no request is in flight, grace passes (a negative grace
// does not wait) or ctx ends, whichever comes first, and reports whether
// none is left: a service's Stop lets what it serves finish, and its
// caller's deadline cuts that short.
func (c *Counter) Drain(ctx context.Context, grace time.Duration) bool {
	t := time.NewTimer(max(grace, 0))
	defer t.Stop()
	return c.waitOr(ctx.Done(), t.C)
}

// waitOr waits until no request is in flight, stop closes or expired fires
// (a nil channel never does), and reports whether none is.
func (c *Counter) waitOr(stop <-chan struct{}, expired <-chan time.Time) bool {
	for {
		c.mu.Lock()
		if c.n == 0 {
			c.mu.Unlock()
			return true
		}
		if c.idle == nil {
			c.idle = make(chan struct{})
		}
		idle := c.idle
		c.mu.Unlock()
		select {
		case <-idle:
		case <-expired:
			return false
		case <-stop:
			return false
		}
	}
}
