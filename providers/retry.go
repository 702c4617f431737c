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
// cannot fix (authentication, bad request, model not found, context window; see Retryable) are
// not retried. A call that fails returns a *RetryError saying how many attempts were made, except
// when the context ends during a call or a wait: then the context's error is returned as it is.
//
// WithRetry is the one layer of retries between a caller and a provider: the adapters' SDKs do
// not retry, and callers (runtime/harnessed among them) do not call again a model that gave up.
// A caller sees each retry through OnRetry. Text streamed to Request.OnText by a failed attempt
// is not taken back: a watcher sees the answer start again.
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

// RetryError is the error of a call through WithRetry that did not succeed: the last attempt's
// error and how many attempts were made. It unwraps to the last error, so errors.Is (with the
// Err* kinds) and errors.As (to an *Error) see through it.
type RetryError struct {
	Attempts int
	Err      error
}

// Error is the last error followed by the attempts, for example "anthropic/claude-x: server
// error (HTTP 500): Internal server error (4 attempts)" or "...: authentication failed (HTTP
// 401): invalid x-api-key (1 attempt; not retried: authentication failed)".
func (e *RetryError) Error() string {
	attempts := fmt.Sprintf("%d attempts", e.Attempts)
	if e.Attempts == 1 {
		attempts = "1 attempt"
	}
	if !Retryable(e.Err) {
		attempts += "; not retried"
		var pe *Error
		if errors.As(e.Err, &pe) && pe.Kind != nil {
			attempts += ": " + pe.Kind.Error()
		}
	}
	return fmt.Sprintf("%v (%s)", e.Err, attempts)
}

func (e *RetryError) Unwrap() error { return e.Err }

// A RetryFunc is told of a failed attempt that is about to be retried: its number (from 1), its
// error and the wait before the next.
type RetryFunc func(attempt int, err error, wait time.Duration)

type onRetryKey struct{}

// OnRetry returns a context with which the models of WithRetry call f before each wait, on the
// calling goroutine. A runtime uses it to report retries as they happen.
func OnRetry(ctx context.Context, f RetryFunc) context.Context {
	return context.WithValue(ctx, onRetryKey{}, f)
}

type retrying struct {
	Model
	p Retry
}

func (r *retrying) Generate(ctx context.Context, req Request) (Response, error) {
	notify, _ := ctx.Value(onRetryKey{}).(RetryFunc)
	backoff := r.p.InitialBackoff
	for attempt := 1; ; attempt++ {
		resp, err := r.Model.Generate(ctx, req)
		switch {
		case err == nil:
			return resp, nil
		case ctx.Err() != nil:
			return resp, err
		case !Retryable(err) || attempt == r.p.MaxAttempts:
			return resp, &RetryError{Attempts: attempt, Err: err}
		}
		wait := time.Duration(float64(backoff) * (0.5 + rand.Float64()))
		var pe *Error
		if errors.As(err, &pe) && pe.RetryAfter > 0 {
			wait = pe.RetryAfter
		}
		wait = min(wait, r.p.MaxBackoff)
		backoff = min(2*backoff, r.p.MaxBackoff)
		if notify != nil {
			notify(attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Response{}, ctx.Err()
		}
	}
}
