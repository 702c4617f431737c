package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how often and when a failing node is tried again. Zero fields take the
// defaults shown.
type RetryPolicy struct {
	MaxAttempts     int           // attempts in all, including the first (default 3)
	InitialInterval time.Duration // wait before the second attempt (default 500ms)
	BackoffFactor   float64       // each wait is the previous one times this (default 2)
	MaxInterval     time.Duration // no wait is longer (default 30s)
	// Jitter randomises each wait to between 50% and 150% of its nominal length.
	Jitter bool
	// RetryOn says which errors are worth another attempt (default: DefaultRetryOn). Interrupts
	// and the cancellation of the run are never retried.
	RetryOn func(error) bool
}

// DefaultRetryOn is the RetryOn of a policy that sets none, LangGraph's default: every error is
// worth another attempt but one whose HTTP status says the request itself is wrong (400–407 and
// 409: a bad request, a missing or wrong key, no such model), which fails the same way every time.
// An error carries a status by having, anywhere in its chain, a method HTTPStatus() int, as a
// provider's error does. Rate limits (429), timeouts (408) and server errors are retried.
func DefaultRetryOn(err error) bool {
	var s interface{ HTTPStatus() int }
	if !errors.As(err, &s) {
		return true
	}
	status := s.HTTPStatus()
	return !(status >= 400 && status <= 407 || status == 409)
}

func (p RetryPolicy) validate() error {
	if p.MaxAttempts < 0 || p.InitialInterval < 0 || p.MaxInterval < 0 || p.BackoffFactor < 0 {
		return fmt.Errorf("retry policy has a negative field: %+v", p)
	}
	return nil
}

func (p RetryPolicy) attempts() int {
	if p.MaxAttempts == 0 {
		return 3
	}
	return p.MaxAttempts
}

// wait returns how long to wait after the given failed attempt (1-based).
func (p RetryPolicy) wait(attempt int) time.Duration {
	d := p.InitialInterval
	if d == 0 {
		d = 500 * time.Millisecond
	}
	factor := p.BackoffFactor
	if factor == 0 {
		factor = 2
	}
	limit := p.MaxInterval
	if limit == 0 {
		limit = 30 * time.Second
	}
	f := float64(d)
	for i := 1; i < attempt && f < float64(limit); i++ {
		f *= factor
	}
	f = min(f, float64(limit))
	if p.Jitter {
		f *= 0.5 + rand.Float64()
	}
	return time.Duration(f)
}

func (p RetryPolicy) retryable(err error) bool {
	var ir *interruptSignal
	if errors.As(err, &ir) {
		return false
	}
	if p.RetryOn == nil {
		return DefaultRetryOn(err)
	}
	return p.RetryOn(err)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
