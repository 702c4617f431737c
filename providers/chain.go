package providers

import (
	"context"
	"errors"
	"strings"
)

// FallbackOn says which failures, besides those that always warrant it, move a chain of
// Fallback on to its next model. Both are off by default: a wrong key or a wrong model name is
// usually a mistake to fix, not a reason to pay another provider.
type FallbackOn struct {
	Auth     bool // the provider refused the key (401, 403)
	NotFound bool // the provider does not serve the model (404)
}

// Fallback returns a model that tries ms in order: a call that fails on one for a reason another
// may not share goes to the next. The reasons are a rate limit, an overload, a server or
// connection error (see Retryable) and a call that timed out while the caller's context had
// not, plus what on adds. Other failures (a bad request, a context window exceeded, the caller's
// context ending) are returned at once, and a refusal is an answer, not a failure. Each model
// retries as it was built to (see WithRetry): a rate limit falls back once its retries are spent.
//
// A streamed call (Request.OnText) falls back only while no text has been delivered: once a
// watcher has seen part of an answer, the model's failure is returned, not another model's answer
// appended to it.
//
// The chain's name is the names of ms joined by commas, as package models reads it. The
// Response of a call says which model answered: its Model is that model's provider, a slash, and
// the model as the provider named it ("openai/gpt-4o-2024-08-06"). When the chain fell back, the
// error, if the call failed, is a *FallbackError; a caller sees each fall-back as it happens
// through OnFallback. It panics when ms is empty.
func Fallback(on FallbackOn, ms ...Model) Model {
	if len(ms) == 0 {
		panic("providers: Fallback of no models")
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name()
	}
	return &chain{ms: ms, on: on, name: strings.Join(names, ",")}
}

// FallbackError is the error of a call through Fallback that failed after falling back: the
// models tried, in order, and the error of each. It unwraps to the last error, so errors.Is
// (with the Err* kinds) and errors.As (to an *Error) see what ended the call.
type FallbackError struct {
	Models []string
	Errs   []error
}

// Error lists each model tried with its error: "fallback chain failed: anthropic/claude-x:
// server error (HTTP 500) (4 attempts); then openai/gpt-4o: bad request (HTTP 400): …".
func (e *FallbackError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
		if !strings.HasPrefix(parts[i], e.Models[i]) {
			parts[i] = e.Models[i] + ": " + parts[i]
		}
	}
	return "fallback chain failed: " + strings.Join(parts, "; then ")
}

func (e *FallbackError) Unwrap() error { return e.Errs[len(e.Errs)-1] }

// A FallbackFunc is told that the model from failed with err and that the call goes on to the
// model to.
type FallbackFunc func(from string, err error, to string)

type onFallbackKey struct{}

// OnFallback returns a context with which the chains of Fallback call f before moving on to
// their next model, on the calling goroutine. A runtime uses it to report fall-backs as they
// happen.
func OnFallback(ctx context.Context, f FallbackFunc) context.Context {
	return context.WithValue(ctx, onFallbackKey{}, f)
}

type chain struct {
	ms   []Model
	on   FallbackOn
	name string
}

func (c *chain) Name() string { return c.name }

func (c *chain) Generate(ctx context.Context, req Request) (Response, error) {
	notify, _ := ctx.Value(onFallbackKey{}).(FallbackFunc)
	delivered := false
	if onText := req.OnText; onText != nil {
		req.OnText = func(delta string) {
			delivered = delivered || delta != ""
			onText(delta)
		}
	}
	var fe FallbackError
	for i, m := range c.ms {
		resp, err := m.Generate(ctx, req)
		if err == nil {
			provider, _, _ := strings.Cut(m.Name(), "/")
			if resp.Model == "" {
				resp.Model = m.Name()
			} else if !strings.HasPrefix(resp.Model, provider+"/") {
				resp.Model = provider + "/" + resp.Model
			}
			return resp, nil
		}
		fe.Models, fe.Errs = append(fe.Models, m.Name()), append(fe.Errs, err)
		if i == len(c.ms)-1 || delivered || !c.fallsBack(ctx, err) {
			if i == 0 {
				return resp, err
			}
			return resp, &fe
		}
		if notify != nil {
			notify(m.Name(), err, c.ms[i+1].Name())
		}
	}
	panic("unreachable: a chain has at least one model")
}

// fallsBack reports whether err, a failure of a call under ctx, moves the chain on.
func (c *chain) fallsBack(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var pe *Error
	status := 0
	if errors.As(err, &pe) {
		status = pe.Status
	}
	switch {
	case Retryable(err), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.Is(err, ErrAuth):
		return c.on.Auth
	case status == 404:
		return c.on.NotFound
	}
	return false
}
