package providers_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/agiraph/agiraph/graph"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/tools"
)

func TestParseName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, provider, model string }{
		{"anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"},
		{"openrouter/meta-llama/llama-3.1-70b", "openrouter", "meta-llama/llama-3.1-70b"},
	} {
		p, m, err := providers.ParseName(tc.in)
		if err != nil || p != tc.provider || m != tc.model {
			t.Errorf("ParseName(%q) = %q, %q, %v", tc.in, p, m, err)
		}
	}
	for _, bad := range []string{"", "gpt-4o", "/x", "x/"} {
		if _, _, err := providers.ParseName(bad); err == nil {
			t.Errorf("ParseName(%q) accepted", bad)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	for status, kind := range map[int]error{
		429: providers.ErrRateLimit, 401: providers.ErrAuth, 403: providers.ErrAuth, 529: providers.ErrOverloaded,
		503: providers.ErrOverloaded, 500: providers.ErrServer, 400: providers.ErrBadRequest, 413: providers.ErrContextWindow,
	} {
		if got := providers.KindOfStatus(status); got != kind {
			t.Errorf("KindOfStatus(%d) = %v, want %v", status, got, kind)
		}
	}
	if providers.KindOfStatus(200) != nil {
		t.Error("200 is an error")
	}
	cause := errors.New("reset by peer")
	err := fmt.Errorf("calling: %w", &providers.Error{Provider: "openai", Model: "gpt-4o", Kind: providers.ErrConnection, Err: cause, RetryAfter: time.Second})
	var pe *providers.Error
	if !errors.Is(err, providers.ErrConnection) || !errors.Is(err, cause) || !errors.As(err, &pe) || pe.RetryAfter != time.Second || !providers.Retryable(err) {
		t.Errorf("error %v does not match its kind and cause", err)
	}
	if providers.Retryable(&providers.Error{Kind: providers.ErrAuth}) || providers.Retryable(&providers.Error{Kind: providers.ErrBadRequest}) {
		t.Error("auth and bad requests are not retryable")
	}
}

// A node's default retry policy does not retry a call the provider refused as wrong.
func TestGraphRetriesNoRefusedCall(t *testing.T) {
	refused := fmt.Errorf("calling: %w", &providers.Error{Provider: "openai", Model: "gpt-4o", Status: 401, Kind: providers.ErrAuth})
	limited := &providers.Error{Provider: "openai", Model: "gpt-4o", Status: 429, Kind: providers.ErrRateLimit}
	assert.False(t, graph.DefaultRetryOn(refused))
	assert.True(t, graph.DefaultRetryOn(limited))
}

func TestMessagesRoundTripAsJSON(t *testing.T) {
	t.Parallel()
	msgs := []providers.Message{
		providers.UserText("read a.txt"),
		{Role: providers.Assistant, Parts: []providers.Part{
			providers.Text("reading"),
			{Type: providers.ToolCallPart, ToolCall: &tools.Call{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}},
			{Type: providers.OpaquePart, Provider: "anthropic", Raw: json.RawMessage(`{"type":"server_tool_use","id":"s1"}`)},
		}},
		providers.ToolResults([]tools.Result{{CallID: "c1", Name: "read_file", Content: "hello"}, {CallID: "c2", Name: "x", Content: "no", IsError: true}}),
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var back []providers.Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, msgs) {
		t.Errorf("round trip changed the messages:\n got %+v\nwant %+v", back, msgs)
	}
	if back[1].Text() != "reading" || len(back[1].ToolCalls()) != 1 || len(back[2].Parts) != 2 || !back[2].Parts[1].ToolResult.IsError {
		t.Errorf("helpers: %+v", back)
	}
	specs := providers.Specs([]tools.Tool{{Name: "a", Description: "does a", Schema: json.RawMessage(`{"type":"object"}`)}})
	if len(specs) != 1 || specs[0].Name != "a" || string(specs[0].Schema) != `{"type":"object"}` {
		t.Errorf("specs %+v", specs)
	}
}

func TestPricesLongestPrefixAndCost(t *testing.T) {
	t.Parallel()
	ps := providers.Prices{
		"claude-sonnet":     {Input: 1},
		"claude-sonnet-4-5": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	}
	p, ok := ps.Lookup("claude-sonnet-4-5-20250929")
	if !ok || p.Input != 3 {
		t.Fatalf("Lookup = %+v, %v; want the longest prefix, claude-sonnet-4-5", p, ok)
	}
	if _, ok := ps.Lookup("gpt-4o"); ok {
		t.Fatal("Lookup matched a model with no price")
	}
	u := ps.Priced("claude-sonnet-4-5", providers.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 1_000_000, CacheWriteTokens: 1_000_000})
	if want := 3 + 1.5 + 0.3 + 3.75; math.Abs(u.CostUSD-want) > 1e-9 {
		t.Fatalf("CostUSD = %v, want %v", u.CostUSD, want)
	}
	if u := ps.Priced("mystery", providers.Usage{InputTokens: 10}); u.CostUSD != 0 {
		t.Fatalf("unknown model priced at %v", u.CostUSD)
	}
}
