package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/agiraph/agiraph/providers"
)

// wrapError turns an error of the SDK into what Generate returns: the context's error when ctx
// has ended, else a *providers.Error.
func (m *Model) wrapError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// Not a *providers.Error, so not retryable; matches context.Canceled and
		// context.DeadlineExceeded.
		return fmt.Errorf("%s: %w", m.Name(), ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return m.apiError(apiErr)
	}
	kind := providers.ErrServer // an answer that could not be read
	if isTransport(err) {
		kind = providers.ErrConnection
	}
	return &providers.Error{Provider: providerName, Model: m.model, Kind: kind, Err: err}
}

// isTransport reports whether err is a failure to reach the API or to read its whole answer.
// The SDK's own per-attempt timeout (its context.DeadlineExceeded while the caller's context
// is alive) counts as one.
func isTransport(err error) bool {
	var (
		urlErr *url.Error
		netErr net.Error
	)
	return errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded)
}

// maxRawMessage bounds the part of an error body that is not the API's kept as the message.
const maxRawMessage = 500

// apiErrorBody is the body of an API error: {"type":"error","error":{"type":...,"message":...}}.
type apiErrorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// apiError translates an error the API answered, as an HTTP status or as an "error" event in a
// stream (whose HTTP status was 200 and is not reported).
func (m *Model) apiError(e *sdk.Error) *providers.Error {
	var body apiErrorBody
	_ = json.Unmarshal([]byte(e.RawJSON()), &body) // a body that is not JSON leaves it empty
	typ, msg := body.Error.Type, body.Error.Message
	if typ == "" {
		typ = string(e.Type())
	}
	if msg == "" { // not the API's error body (a proxy's page, say): keep its start
		msg = e.RawJSON()
		if len(msg) > maxRawMessage {
			msg = msg[:maxRawMessage] + "..."
		}
	}
	status := e.StatusCode
	if status < http.StatusBadRequest {
		status = 0
	}
	out := &providers.Error{
		Provider: providerName, Model: m.model, Status: status,
		Kind: errorKind(status, typ, msg), Message: msg,
	}
	if e.Response != nil {
		out.RetryAfter = retryAfter(e.Response.Header)
	}
	return out
}

// errorKind is the kind of an API error: from its type when that says more than the status.
func errorKind(status int, typ, msg string) error {
	switch typ {
	case "rate_limit_error":
		return providers.ErrRateLimit
	case "overloaded_error":
		return providers.ErrOverloaded
	case "authentication_error", "permission_error":
		return providers.ErrAuth
	case "api_error":
		return providers.ErrServer
	case "invalid_request_error":
		if tooLong(msg) {
			return providers.ErrContextWindow
		}
		if status == 0 {
			return providers.ErrBadRequest
		}
	}
	if kind := providers.KindOfStatus(status); kind != nil {
		return kind
	}
	return providers.ErrServer // an error event of a type not known here
}

// tooLong reports whether an invalid-request message says the conversation does not fit the
// model's context window ("prompt is too long: 208310 tokens > 200000 maximum", "input length
// and `max_tokens` exceed context limit: ...").
func tooLong(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"prompt is too long", "context window", "context limit"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retryAfter reads how long the API asked to wait: retry-after-ms, or retry-after in seconds
// or as an HTTP date. It is 0 when there is none.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
