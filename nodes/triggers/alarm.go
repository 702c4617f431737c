package triggers

import (
	"sync"
	"time"
)

// Alarm calls a function when the time set for a key comes, for any number of keys, with one
// goroutine and one wait on its [Clock] at a time — and none while no key has a time. A program
// that keeps many agents closes the scheduler of each one at rest, sets the alarm of its key to
// when its next trigger comes due ([Scheduler.Next]), and opens it again then: an agent at rest
// costs a map entry, not a goroutine or a timer of its own. Its methods are safe for concurrent
// use.
type Alarm struct {
	clock Clock
	fn    func(key string)

	mu      sync.Mutex
	at      map[string]time.Time
	running bool          // the goroutine runs
	closed  bool          // Close was called
	wake    chan struct{} // tells the goroutine the times changed
	done    chan struct{} // closed when the goroutine returns
}

// NewAlarm returns an alarm that calls fn(key) on its own goroutine, one key at a time in the
// order of their times, when the time set for key comes by clock (nil: the system clock).
func NewAlarm(clock Clock, fn func(key string)) *Alarm {
	if clock == nil {
		clock = RealClock()
	}
	return &Alarm{clock: clock, fn: fn, at: map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

// Set sets the time at which fn(key) is called, once (key is then forgotten until set again),
// in place of any time key had; a time already passed calls it at once. A zero at forgets key.
// After Close, Set does nothing.
func (a *Alarm) Set(key string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if at.IsZero() {
		delete(a.at, key)
	} else {
		a.at[key] = at.Round(0)
	}
	switch {
	case a.running:
		select {
		case a.wake <- struct{}{}:
		default:
		}
	case len(a.at) > 0:
		a.running, a.done = true, make(chan struct{})
		go a.loop(a.done)
	}
}

// When returns the time set for key; zero when none is.
func (a *Alarm) When(key string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at[key]
}

// Close forgets every key and waits for the goroutine to return (a call of fn under way
// finishes first). fn must not call Close.
func (a *Alarm) Close() {
	a.mu.Lock()
	a.closed = true
	clear(a.at)
	running, done := a.running, a.done
	select {
	case a.wake <- struct{}{}:
	default:
	}
	a.mu.Unlock()
	if running {
		<-done
	}
}

func (a *Alarm) loop(done chan struct{}) {
	defer close(done)
	for {
		a.mu.Lock()
		if a.closed || len(a.at) == 0 {
			a.running = false
			a.mu.Unlock()
			return
		}
		key, at := "", time.Time{}
		for k, t := range a.at {
			if key == "" || t.Before(at) || t.Equal(at) && k < key {
				key, at = k, t
			}
		}
		now := a.clock.Now().Round(0)
		if !at.After(now) {
			delete(a.at, key)
			a.mu.Unlock()
			a.fn(key)
			continue
		}
		// The wall clock may jump (a suspended machine, a corrected clock): look again within
		// maxWait, as the scheduler does.
		if at.Sub(now) > maxWait {
			at = now.Add(maxWait)
		}
		timer := a.clock.At(at)
		a.mu.Unlock()
		select {
		case <-timer:
		case <-a.wake:
		}
	}
}
