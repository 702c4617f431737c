package langchain

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agiraph/agiraph/providers"
)

// classify turns an error of langchaingo into a *providers.Error: from what the transport
// recorded when there is a recorder, else from the error itself.
func (m *Model) classify(err error, rec *recorder) *providers.Error {
	if rec != nil {
		if e := m.fromRecorder(err, rec); e != nil {
			return e
		}
	}
	e := m.fail(kindOfError(err), "", err)
	e.Status = statusInText(err.Error())
	return e
}

// fromRecorder makes the error from what the transport saw; nil when it saw nothing wrong.
func (m *Model) fromRecorder(err error, rec *recorder) *providers.Error {
	status, wait, apiErr, connErr := rec.snapshot()
	switch {
	case status >= 400:
		e := m.fail(refine(providers.KindOfStatus(status), apiErr), "", nil)
		e.Status, e.RetryAfter, e.Message = status, wait, messageOf(apiErr, err)
		return e
	case apiErr != nil: // an error chunk inside a stream
		e := m.fail(refine(kindOfType(apiErr), apiErr), apiErr.Message, nil)
		e.Status = status
		return e
	case connErr != nil: // no answer, or a body cut short (Status 200)
		e := m.fail(providers.ErrConnection, "", connErr)
		e.Status = status
		return e
	}
	return nil
}

// messageOf returns the provider's message, or langchaingo's error text when there is none.
func messageOf(apiErr *apiError, err error) string {
	if apiErr != nil && apiErr.Message != "" {
		return apiErr.Message
	}
	return err.Error()
}

// refine corrects a kind by the error's code and type.
func refine(kind error, e *apiError) error {
	if e == nil {
		return kind
	}
	switch code := strings.ToLower(e.code() + " " + e.Type); {
	case strings.Contains(code, "context_length_exceeded"), strings.Contains(code, "string_above_max_length"):
		return providers.ErrContextWindow
	case strings.Contains(code, "insufficient_quota"):
		// The account has no credit: retrying cannot help, another key or provider can.
		return providers.ErrAuth
	case strings.Contains(code, "invalid_api_key"):
		return providers.ErrAuth
	}
	if kind == providers.ErrBadRequest && strings.Contains(strings.ToLower(e.Message), "maximum context length") {
		return providers.ErrContextWindow
	}
	return kind
}

// kindOfType returns the kind of an error that came without an HTTP status (inside a stream),
// from its type and code. An unknown one is a server error: the stream had started well.
func kindOfType(e *apiError) error {
	typ, code := strings.ToLower(e.Type), strings.ToLower(e.code())
	switch {
	// OpenAI's rate-limit errors have the type of the limit hit: "requests" or "tokens".
	case typ == "requests", typ == "tokens", strings.Contains(typ+code, "rate_limit"):
		return providers.ErrRateLimit
	case strings.Contains(typ+code, "overloaded"):
		return providers.ErrOverloaded
	case strings.Contains(typ, "authentication"), strings.Contains(typ, "permission"):
		return providers.ErrAuth
	case strings.Contains(typ, "invalid_request"):
		return providers.ErrBadRequest
	}
	if n, err := strconv.Atoi(code); err == nil && n >= 400 {
		return providers.KindOfStatus(n)
	}
	return providers.ErrServer
}

// statusPattern finds an HTTP status in an error's text ("status code: 429", "status 503").
var statusPattern = regexp.MustCompile(`(?i)status(?:\s*code)?[:=\s]+([1-5]\d\d)\b`)

func statusInText(s string) int {
	if m := statusPattern.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// kindOfError classifies an error of a model without a recorder: by langchaingo's standard
// error code, else by the HTTP status or words in its text, else as a server error.
func kindOfError(err error) error {
	var le *llms.Error
	if errors.As(err, &le) {
		if k := kindOfCode(le.Code); k != nil {
			return k
		}
	}
	text := strings.ToLower(err.Error())
	switch {
	case strings.Contains(text, "context length"), strings.Contains(text, "context_length"), strings.Contains(text, "context window"):
		return providers.ErrContextWindow
	case strings.Contains(text, "insufficient_quota"), strings.Contains(text, "exceeded your current quota"):
		return providers.ErrAuth
	}
	if status := statusInText(text); status >= 400 {
		return providers.KindOfStatus(status)
	}
	switch {
	case strings.Contains(text, "rate limit"):
		return providers.ErrRateLimit
	case strings.Contains(text, "api key"), strings.Contains(text, "unauthorized"):
		return providers.ErrAuth
	case strings.Contains(text, "network error"), strings.Contains(text, "connection"), strings.Contains(text, "timeout"), strings.Contains(text, "eof"):
		return providers.ErrConnection
	}
	return providers.ErrServer
}

// kindOfCode maps langchaingo's standard error codes; nil for unknown.
func kindOfCode(c llms.ErrorCode) error {
	switch c {
	case llms.ErrCodeAuthentication, llms.ErrCodeQuotaExceeded:
		return providers.ErrAuth
	case llms.ErrCodeRateLimit:
		return providers.ErrRateLimit
	case llms.ErrCodeTokenLimit:
		return providers.ErrContextWindow
	case llms.ErrCodeInvalidRequest, llms.ErrCodeResourceNotFound, llms.ErrCodeContentFilter, llms.ErrCodeNotImplemented:
		return providers.ErrBadRequest
	case llms.ErrCodeTimeout:
		return providers.ErrConnection
	case llms.ErrCodeProviderUnavailable:
		return providers.ErrOverloaded
	}
	return nil
}
