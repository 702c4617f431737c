package providers

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The kinds of model errors callers branch on, matched with errors.Is against an *Error.
var (
	ErrRateLimit     = errors.New("rate limited")              // 429: slow down; RetryAfter may say how long
	ErrOverloaded    = errors.New("overloaded")                // the provider is overloaded (529, 503)
	ErrServer        = errors.New("server error")              // other 5xx
	ErrAuth          = errors.New("authentication failed")     // 401, 403: a missing or wrong key
	ErrBadRequest    = errors.New("bad request")               // other 4xx: the request itself is wrong (404: no such model)
	ErrContextWindow = errors.New("context window exceeded")   // the conversation does not fit the model
	ErrConnection    = errors.New("connection failed")         // no answer: network, DNS, reset
	ErrMissingKey    = errors.New("no API key")                // the key's environment variable is not set
	ErrUnknownModel  = errors.New("unknown provider or model") // a name no adapter serves
)

// Error is a failed model call: which provider and model, the HTTP status if there was one, the
// kind (one of the Err* values), how long the provider asked to wait, and the provider's message.
type Error struct {
	Provider   string
	Model      string
	Status     int
	Kind       error
	RetryAfter time.Duration
	Message    string
	Err        error // the underlying error, if any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s/%s: %v", e.Provider, e.Model, e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches the error's kind, so errors.Is(err, ErrRateLimit) works.
func (e *Error) Is(target error) bool { return target == e.Kind }

func (e *Error) Unwrap() error { return e.Err }

// HTTPStatus is the HTTP status of the failed call, 0 when there was none. graph.DefaultRetryOn
// reads it: a node's default retry policy does not try a request again that the provider refused
// as wrong (400–407, 409).
func (e *Error) HTTPStatus() int { return e.Status }

// MissingKeyError is the cause (Error.Err) of an error of kind ErrMissingKey: where the key
// would have come from. An adapter names its own option; a package that builds adapters for its
// users, as models does, sets Option to the option its users pass.
type MissingKeyError struct {
	Env    []string // the environment variables read, in order
	Option string   // the option that gives a key, as a caller writes it: "anthropic.WithAPIKey"
}

func (e *MissingKeyError) Error() string {
	return "set " + strings.Join(e.Env, " or ") + " or pass " + e.Option
}

// Retryable reports whether trying the same request again later may succeed: rate limits,
// overloads, server and connection errors. The other kinds (authentication, bad request, model
// not found, context window) fail the same way every time, and so does an error of no kind.
func Retryable(err error) bool {
	return errors.Is(err, ErrRateLimit) || errors.Is(err, ErrOverloaded) || errors.Is(err, ErrServer) || errors.Is(err, ErrConnection)
}

// KindOfStatus maps an HTTP status to an error kind (nil for a success).
func KindOfStatus(status int) error {
	switch {
	case status < 400:
		return nil
	case status == 429:
		return ErrRateLimit
	case status == 401 || status == 403:
		return ErrAuth
	case status == 529 || status == 503:
		return ErrOverloaded
	case status >= 500:
		return ErrServer
	case status == 413:
		return ErrContextWindow
	}
	return ErrBadRequest
}
