package triggers

import (
	"sort"
	"sync"
	"time"
)

// Clock is time as the scheduler sees it. [RealClock] is the system clock; tests use a
// [FakeClock] and move it by hand.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// At returns a channel that receives a time once the clock reads t or later (at once when
	// it already does). Waiting for a time rather than for a duration leaves no gap between
	// reading the clock and asking for the timer in which the clock could move unseen.
	At(t time.Time) <-chan time.Time
}

// RealClock returns the system clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// FakeClock is a [Clock] that only moves when [FakeClock.Advance] is called. It is safe for
// concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     int
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at  time.Time
	seq int // registration order, to break ties
	ch  chan time.Time
}

// NewFakeClock returns a fake clock that reads t until it is advanced.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the fake clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At returns a channel (buffered, so an unread one never blocks the clock) that receives t
// once the clock has been advanced to t or past it; a t not after Now receives Now at once.
func (c *FakeClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.seq++
	c.waiters = append(c.waiters, fakeWaiter{at: t, seq: c.seq, ch: ch})
	return ch
}

// Advance moves the clock forward by d (a negative d counts as zero) and fires the At
// channels that have come due, in the order of their due times (ties in the order At was
// called). Each receives its own due time. When Advance returns, Now reads the new time.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d < 0 {
		d = 0
	}
	target := c.now.Add(d)
	sort.SliceStable(c.waiters, func(i, j int) bool {
		a, b := c.waiters[i], c.waiters[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		return a.seq < b.seq
	})
	n := 0
	for _, w := range c.waiters {
		if w.at.After(target) {
			break
		}
		c.now = w.at
		w.ch <- w.at
		n++
	}
	c.waiters = append(c.waiters[:0:0], c.waiters[n:]...)
	c.now = target
}
