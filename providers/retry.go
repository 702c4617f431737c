package providers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Retry says how a model call that failed for a passing reason (rate limit, overload, server or
// connection error; see Retryable) is tried again. Zero fields take the defaults shown.
type Retry struct {
	MaxAttempts    int           // attempts in all, the first included (default 4)
	InitialBackoff time.Duration // wait after the first failure (default 1s), doubled each time
	MaxBackoff     time.Duration // no wait is longer, a provider's retry-after included (default 60s)
}

// WithRetry returns m with failed calls retried as p says. A wait honours the provider's
// retry-after when it gave one, and is otherwise exponential with jitter. Errors that retrying
// cannot fix (authentication, bad request, context window) are returned at once, and so is the
// context's error when it ends during a call or a wait. Text streamed to Request.OnText by a failed
// attempt is not taken back: a watcher sees the answer start again.
func WithRetry(m Model, p Retry) Model {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = time.Second
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 60 * time.Second
	}
	return &retrying{Model: m, p: p}
}

type retrying struct {
	Model
	p Retry
}

func (r *retrying) Generate(ctx context.Context, req Request) (Response, error) {
	backoff := r.p.InitialBackoff
	for attempt := 1; ; attempt++ {
		resp, err := r.Model.Generate(ctx, req)
		if err == nil || !Retryable(err) || ctx.Err() != nil {
			return resp, err
		}
		if attempt == r.p.MaxAttempts {
			return resp, fmt.Errorf("providers: %s: gave up after %d attempts: %w", r.Name(), attempt, err)
		}
		wait := time.Duration(float64(backoff) * (0.5 + rand.Float64()))
		var pe *Error
		if errors.As(err, &pe) && pe.RetryAfter > 0 {
			wait = pe.RetryAfter
		}
		backoff = min(2*backoff, r.p.MaxBackoff)
		t := time.NewTimer(min(wait, r.p.MaxBackoff))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Response{}, ctx.Err()
		}
	}
}
