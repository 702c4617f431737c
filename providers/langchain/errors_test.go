package langchain_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms/openai"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/langchain"
	"github.com/agiraph/agiraph/providers/providertest"
)

var hi = providers.Request{Messages: []providers.Message{providers.UserText("hi")}}

func streaming(req providers.Request) providers.Request {
	req.OnText = func(string) {}
	return req
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name       string
		reply      providertest.Reply
		stream     bool
		kind       error
		status     int
		retryAfter time.Duration
		message    string
	}{
		{"rate limit", providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: 2 * time.Second}, false, providers.ErrRateLimit, 429, 2 * time.Second, "Rate limit reached"},
		{"rate limit stream", providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: 2 * time.Second}, true, providers.ErrRateLimit, 429, 2 * time.Second, "Rate limit reached"},
		{"auth", providertest.Reply{Err: providers.ErrAuth}, false, providers.ErrAuth, 401, 0, "Incorrect API key"},
		{"context window", providertest.Reply{Err: providers.ErrContextWindow}, false, providers.ErrContextWindow, 400, 0, "maximum context length"},
		{"bad request", providertest.Reply{Err: providers.ErrBadRequest}, false, providers.ErrBadRequest, 400, 0, "role 'tool'"},
		{"server", providertest.Reply{Err: providers.ErrServer}, false, providers.ErrServer, 500, 0, "The server had an error"},
		{"overloaded", providertest.Reply{Err: providers.ErrOverloaded}, true, providers.ErrOverloaded, 503, 0, "overloaded"},
		{"quota", providertest.Reply{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"}, false, providers.ErrAuth, 429, 0, "exceeded your current quota"},
		{"mid-stream server", providertest.Reply{Err: providers.ErrServer, MidStream: true}, true, providers.ErrServer, 200, 0, "The server had an error"},
		{"mid-stream context", providertest.Reply{Err: providers.ErrContextWindow, MidStream: true}, true, providers.ErrContextWindow, 200, 0, "maximum context length"},
		{"mid-stream rate limit", providertest.Reply{Err: providers.ErrRateLimit, MidStream: true}, true, providers.ErrRateLimit, 200, 0, "Rate limit reached"},
		{"connection", providertest.Reply{Err: providers.ErrConnection}, false, providers.ErrConnection, 0, 0, ""},
		{"connection stream", providertest.Reply{Err: providers.ErrConnection}, true, providers.ErrConnection, 0, 0, ""},
		{"connection mid-stream", providertest.Reply{Err: providers.ErrConnection, MidStream: true}, true, providers.ErrConnection, 200, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := providertest.NewOpenAI(t, c.reply)
			m := service(t, s, "openai", "gpt-4o")
			req := hi
			if c.stream {
				req = streaming(req)
			}
			resp, err := m.Generate(context.Background(), req)
			if !errors.Is(err, c.kind) {
				t.Fatalf("err = %v (response %+v), want kind %v", err, resp, c.kind)
			}
			pe := providerError(t, err)
			eq(t, "provider/model", pe.Provider+"/"+pe.Model, "openai/gpt-4o")
			eq(t, "status", pe.Status, c.status)
			eq(t, "retry after", pe.RetryAfter, c.retryAfter)
			if !strings.Contains(pe.Message, c.message) {
				t.Errorf("message %q does not contain %q", pe.Message, c.message)
			}
			if c.kind == providers.ErrConnection && pe.Err == nil {
				t.Errorf("connection error without its cause")
			}
			eq(t, "requests (langchaingo does not retry)", len(s.Requests()), 1)
		})
	}
}

// TestCancel checks that a cancelled context gives context.Canceled, before and during a call.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := providertest.NewOpenAI(t)
	m := service(t, s, "openai", "gpt-4o")
	_, err := m.Generate(ctx, hi)
	if !errors.Is(err, context.Canceled) || providers.Retryable(err) {
		t.Errorf("err = %v, want context.Canceled, not retryable", err)
	}

	// Cancelled while streaming: langchaingo would return the text so far as a success.
	s = providertest.NewOpenAI(t, providertest.Reply{Text: "one two three four five"})
	m = service(t, s, "openai", "gpt-4o")
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	req := hi
	req.OnText = func(string) { cancel() }
	_, err = m.Generate(ctx, req)
	if !errors.Is(err, context.Canceled) || providers.Retryable(err) {
		t.Errorf("mid-stream: err = %v, want context.Canceled", err)
	}
}

func TestRetry(t *testing.T) {
	policy := providers.Retry{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	cases := []struct {
		name     string
		replies  []providertest.Reply
		kind     error
		requests int
	}{
		{"rate limit then success", []providertest.Reply{{Err: providers.ErrRateLimit, RetryAfter: 2 * time.Second}, {Text: "ok"}}, nil, 2},
		{"server thrice", []providertest.Reply{{Err: providers.ErrServer}, {Err: providers.ErrServer}, {Err: providers.ErrServer}}, providers.ErrServer, 3},
		{"auth once", []providertest.Reply{{Err: providers.ErrAuth}}, providers.ErrAuth, 1},
		{"quota once", []providertest.Reply{{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota"}}, providers.ErrAuth, 1},
		{"mid-stream then success", []providertest.Reply{{Err: providers.ErrServer, MidStream: true}, {Text: "ok"}}, nil, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := providertest.NewOpenAI(t, c.replies...)
			m := providers.WithRetry(service(t, s, "openai", "gpt-4o"), policy)
			start := time.Now()
			resp, err := m.Generate(context.Background(), streaming(hi))
			if c.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				eq(t, "text", resp.Message.Text(), "ok")
			} else if !errors.Is(err, c.kind) {
				t.Fatalf("err = %v, want %v", err, c.kind)
			}
			eq(t, "requests", len(s.Requests()), c.requests)
			// The 2s retry-after is capped by MaxBackoff.
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v: retry-after not capped", d)
			}
		})
	}
}

// TestGenericModel bridges langchaingo's OpenAI client without the recording transport, as New
// sees any llms.Model: errors are classified from their text.
func TestGenericModel(t *testing.T) {
	s := providertest.NewOpenAI(t,
		providertest.Reply{Text: "hello", Usage: providers.Usage{InputTokens: 7, CacheReadTokens: 3, OutputTokens: 2}},
		providertest.Reply{Err: providers.ErrRateLimit},
		providertest.Reply{Err: providers.ErrContextWindow},
		providertest.Reply{Err: providers.ErrAuth},
		providertest.Reply{Err: providers.ErrServer},
	)
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(s.URL()), openai.WithModel("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	m := langchain.New("custom/gpt-4o-mini", llm, langchain.WithPrices(providers.Prices{"gpt-4o-mini": {Input: 1, Output: 2, CacheRead: 0.5}}))
	eq(t, "name", m.Name(), "custom/gpt-4o-mini")
	resp, err := m.Generate(context.Background(), hi)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "text", resp.Message.Text(), "hello")
	eq(t, "model", resp.Model, "gpt-4o-mini")
	eq(t, "usage", resp.Usage, providers.Usage{InputTokens: 7, CacheReadTokens: 3, OutputTokens: 2, CostUSD: (7*1 + 3*0.5 + 2*2) / 1e6})
	for _, want := range []struct {
		kind   error
		status int
	}{{providers.ErrRateLimit, 429}, {providers.ErrContextWindow, 400}, {providers.ErrAuth, 401}, {providers.ErrServer, 500}} {
		_, err := m.Generate(context.Background(), hi)
		if !errors.Is(err, want.kind) {
			t.Errorf("err = %v, want %v", err, want.kind)
			continue
		}
		pe := providerError(t, err)
		eq(t, "status", pe.Status, want.status)
		eq(t, "provider", pe.Provider, "custom")
	}
}

// TestConcurrent runs many calls on one model at once, each answered (or failed) according to
// its own content, so that a recorder mixed up between calls shows.
func TestConcurrent(t *testing.T) {
	const n = 40
	s := providertest.NewOpenAIFunc(t, func(r providertest.Request) providertest.Reply {
		msgs := r.Messages()
		text, _ := msgs[len(msgs)-1]["content"].(string)
		var i int
		fmt.Sscanf(text, "call %d", &i)
		switch i % 4 {
		case 1:
			return providertest.Reply{Err: providers.ErrRateLimit, RetryAfter: time.Duration(i) * time.Second}
		case 2:
			return providertest.Reply{Err: providers.ErrServer, MidStream: true}
		case 3:
			return providertest.Reply{Err: providers.ErrContextWindow}
		}
		return providertest.Reply{Text: "answer " + text, Usage: providers.Usage{InputTokens: i, OutputTokens: 1}}
	})
	m := service(t, s, "openai", "gpt-4o")
	var wg sync.WaitGroup
	errs := make([]error, n)
	resps := make([]providers.Response, n)
	for i := range n {
		wg.Go(func() {
			req := providers.Request{Messages: []providers.Message{providers.UserText(fmt.Sprintf("call %d", i))}}
			if i%2 == 0 {
				req = streaming(req)
			}
			resps[i], errs[i] = m.Generate(context.Background(), req)
		})
	}
	wg.Wait()
	for i := range n {
		switch i % 4 {
		case 0:
			if errs[i] != nil {
				t.Errorf("call %d: %v", i, errs[i])
				continue
			}
			eq(t, "text", resps[i].Message.Text(), fmt.Sprintf("answer call %d", i))
			eq(t, "input tokens", resps[i].Usage.InputTokens, i)
		case 1:
			var pe *providers.Error
			if !errors.As(errs[i], &pe) || pe.Kind != providers.ErrRateLimit || pe.RetryAfter != time.Duration(i)*time.Second {
				t.Errorf("call %d: err = %v, want rate limit with retry-after %ds", i, errs[i], i)
			}
		case 2:
			var pe *providers.Error
			if !errors.As(errs[i], &pe) || pe.Kind != providers.ErrServer || pe.Status != 200 {
				t.Errorf("call %d: err = %v, want mid-stream server error", i, errs[i])
			}
		case 3:
			var pe *providers.Error
			if !errors.As(errs[i], &pe) || pe.Kind != providers.ErrContextWindow || pe.Status != 400 {
				t.Errorf("call %d: err = %v, want context window", i, errs[i])
			}
		}
	}
	eq(t, "requests", len(s.Requests()), n)
}
