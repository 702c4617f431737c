package anthropic_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/anthropic"
	"github.com/agiraph/agiraph/providers/providertest"
)

var hi = providers.Request{Messages: []providers.Message{providers.UserText("hi")}}

// TestErrors checks the translation of API and transport errors, with and without streaming.
func TestErrors(t *testing.T) {
	cases := []struct {
		name       string
		reply      providertest.Reply
		kind       error
		status     int
		retryAfter time.Duration
		message    string // a piece of the message
		streamOnly bool
	}{
		{name: "rate limit", reply: providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: 2 * time.Second},
			kind: providers.ErrRateLimit, status: 429, retryAfter: 2 * time.Second, message: "rate limit"},
		{name: "auth", reply: providertest.Reply{Err: providers.ErrAuth}, kind: providers.ErrAuth, status: 401, message: "invalid x-api-key"},
		{name: "permission", reply: providertest.Reply{Status: 403}, kind: providers.ErrAuth, status: 403, message: "permission"},
		{name: "overloaded", reply: providertest.Reply{Err: providers.ErrOverloaded}, kind: providers.ErrOverloaded, status: 529, message: "Overloaded"},
		{name: "server", reply: providertest.Reply{Status: 500}, kind: providers.ErrServer, status: 500, message: "Internal server error"},
		{name: "type refines status", reply: providertest.Reply{Status: 500, ErrorType: "overloaded_error"}, kind: providers.ErrOverloaded, status: 500},
		{name: "context window", reply: providertest.Reply{Err: providers.ErrContextWindow}, kind: providers.ErrContextWindow, status: 400, message: "prompt is too long"},
		{name: "context limit", reply: providertest.Reply{Status: 400, ErrorMessage: "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000"},
			kind: providers.ErrContextWindow, status: 400},
		{name: "bad request", reply: providertest.Reply{Err: providers.ErrBadRequest}, kind: providers.ErrBadRequest, status: 400, message: "roles must alternate"},
		{name: "mid-stream overloaded", reply: providertest.Reply{Err: providers.ErrOverloaded, MidStream: true},
			kind: providers.ErrOverloaded, message: "Overloaded", streamOnly: true},
		{name: "mid-stream rate limit", reply: providertest.Reply{Err: providers.ErrRateLimit, MidStream: true},
			kind: providers.ErrRateLimit, message: "rate limit", streamOnly: true},
		{name: "mid-stream context window", reply: providertest.Reply{Err: providers.ErrContextWindow, MidStream: true},
			kind: providers.ErrContextWindow, message: "prompt is too long", streamOnly: true},
		{name: "connection", reply: providertest.Reply{Err: providers.ErrConnection}, kind: providers.ErrConnection},
		{name: "mid-stream connection", reply: providertest.Reply{Err: providers.ErrConnection, MidStream: true},
			kind: providers.ErrConnection, streamOnly: true},
	}
	for _, c := range cases {
		for _, mode := range modes {
			if c.streamOnly && !mode.stream {
				continue
			}
			t.Run(c.name+"/"+mode.name, func(t *testing.T) {
				s := providertest.NewAnthropic(t, c.reply)
				req := hi
				watch(&req, mode.stream)
				resp, err := newModel(t, s).Generate(context.Background(), req)
				if err == nil {
					t.Fatalf("no error; answer %+v", resp)
				}
				pe := providerError(t, err)
				if !errors.Is(err, c.kind) {
					t.Errorf("kind = %v, want %v (error %v)", pe.Kind, c.kind, err)
				}
				eq(t, "provider", pe.Provider, "anthropic")
				eq(t, "model", pe.Model, testModel)
				eq(t, "status", pe.Status, c.status)
				eq(t, "retry after", pe.RetryAfter, c.retryAfter)
				if !strings.Contains(pe.Message, c.message) {
					t.Errorf("message %q does not contain %q", pe.Message, c.message)
				}
				if c.kind == providers.ErrConnection && pe.Err == nil {
					t.Errorf("connection error without the underlying error")
				}
				retryable := c.kind != providers.ErrContextWindow && c.kind != providers.ErrBadRequest && c.kind != providers.ErrAuth
				eq(t, "retryable", providers.Retryable(err), retryable)
				requests(t, s, 1)
			})
		}
	}
}

// TestMissingKey checks that New refuses to build a model without a key, naming the variable.
func TestMissingKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	m, err := anthropic.New("claude-sonnet-4-5")
	if m != nil || err == nil {
		t.Fatalf("New = %v, %v; want an error", m, err)
	}
	pe := providerError(t, err)
	if !errors.Is(err, providers.ErrMissingKey) {
		t.Errorf("kind = %v", pe.Kind)
	}
	eq(t, "provider", pe.Provider, "anthropic")
	eq(t, "model", pe.Model, "claude-sonnet-4-5")
	if !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("error %q does not name ANTHROPIC_API_KEY", err)
	}
}

// TestEnvironment checks that the key and base URL come from the environment, and that the
// SDK's other environment variables are not honoured.
func TestEnvironment(t *testing.T) {
	s := providertest.NewAnthropic(t, providertest.Reply{Text: "ok"})
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")
	t.Setenv("ANTHROPIC_BASE_URL", s.URL())
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leaked: yes")
	m, err := anthropic.New(testModel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	h := requests(t, s, 1)[0].Header
	eq(t, "x-api-key", h.Get("X-Api-Key"), "sk-ant-env")
	eq(t, "authorization", h.Get("Authorization"), "")
	eq(t, "custom header", h.Get("X-Leaked"), "")
}

// TestContextEnds checks that a cancelled or expired context gives its own error, not retryable.
func TestContextEnds(t *testing.T) {
	for _, mode := range modes {
		t.Run("cancelled during the call/"+mode.name, func(t *testing.T) {
			arrived, release := make(chan struct{}), make(chan struct{})
			s := providertest.NewAnthropicFunc(t, func(providertest.Request) providertest.Reply {
				close(arrived)
				<-release
				return providertest.Reply{Text: "too late"}
			})
			defer close(release)
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-arrived
				cancel()
			}()
			req := hi
			watch(&req, mode.stream)
			_, err := newModel(t, s).Generate(ctx, req)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v does not match context.Canceled", err)
			}
			if providers.Retryable(err) {
				t.Errorf("error %v is retryable", err)
			}
		})
		t.Run("deadline passed/"+mode.name, func(t *testing.T) {
			s := providertest.NewAnthropic(t)
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			req := hi
			watch(&req, mode.stream)
			_, err := newModel(t, s).Generate(ctx, req)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v does not match context.DeadlineExceeded", err)
			}
			if providers.Retryable(err) {
				t.Errorf("error %v is retryable", err)
			}
			requests(t, s, 0)
		})
	}
}

// TestWithRetry checks that the errors work with providers.WithRetry: passing ones are retried,
// the others are not, and the SDK does not retry on its own.
func TestWithRetry(t *testing.T) {
	policy := providers.Retry{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	t.Run("rate limit then success", func(t *testing.T) {
		// MaxBackoff caps the one-second retry-after, so the test does not wait it.
		s := providertest.NewAnthropic(t,
			providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: time.Second},
			providertest.Reply{Text: "ok"})
		resp, err := providers.WithRetry(newModel(t, s), policy).Generate(context.Background(), hi)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "text", resp.Message.Text(), "ok")
		requests(t, s, 2)
	})
	t.Run("server errors exhaust attempts", func(t *testing.T) {
		s := providertest.NewAnthropic(t,
			providertest.Reply{Status: 500}, providertest.Reply{Status: 500}, providertest.Reply{Status: 500})
		p := policy
		p.MaxAttempts = 3
		_, err := providers.WithRetry(newModel(t, s), p).Generate(context.Background(), hi)
		if !errors.Is(err, providers.ErrServer) {
			t.Fatalf("error %v is not a server error", err)
		}
		requests(t, s, 3)
	})
	t.Run("auth is not retried", func(t *testing.T) {
		s := providertest.NewAnthropic(t, providertest.Reply{Err: providers.ErrAuth})
		_, err := providers.WithRetry(newModel(t, s), policy).Generate(context.Background(), hi)
		if !errors.Is(err, providers.ErrAuth) {
			t.Fatalf("error %v is not an auth error", err)
		}
		requests(t, s, 1)
	})
}
